import { existsSync } from 'node:fs';
import path from 'node:path';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';
import { chromium, type Page } from 'playwright-core';
import type { Engine } from './engines.ts';
import type { BenchResult } from './report.ts';

/** The budget for the chat's first load: JavaScript and CSS as transferred (compressed), in KB of 1000 bytes. */
export const CHAT_FIRST_LOAD_BUDGET_KB = 120;
/** Lighthouse's mobile scores the chat must reach (median of RUNS). */
export const PERFORMANCE_TARGET = 95;
export const ACCESSIBILITY_TARGET = 100;
const RUNS = 5;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

interface Transfer {
  url: string;
  type: string;
  /** Headers and body as they came over the wire (the body compressed when the server compressed it). */
  bytes: number;
  encoding: string;
}

/**
 * Everything a phone downloads when it opens `url` with an empty cache,
 * until the network has been quiet for a second: each response's headers
 * and body as transferred.
 */
async function firstLoad(url: string): Promise<Transfer[]> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
    const page = await context.newPage();
    const transfers: Promise<Transfer>[] = [];
    page.on('requestfinished', (request) => {
      transfers.push(
        (async () => {
          const [sizes, response] = await Promise.all([request.sizes(), request.response()]);
          return {
            url: request.url(),
            type: request.resourceType(),
            bytes: sizes.responseHeadersSize + sizes.responseBodySize,
            encoding: (await response?.headerValue('content-encoding')) ?? 'none',
          };
        })(),
      );
    });
    await page.goto(url, { waitUntil: 'networkidle' });
    await quiet(page);
    return await Promise.all(transfers);
  } finally {
    await browser.close();
  }
}

/** Waits until no request has started for a second (lazy chunks a page fetches after its first paint count too). */
async function quiet(page: Page): Promise<void> {
  let last = Date.now();
  const bump = () => (last = Date.now());
  page.on('request', bump);
  while (Date.now() - last < 1000) await page.waitForTimeout(200);
  page.off('request', bump);
}

const kb = (bytes: number) => Math.round(bytes / 100) / 10;
const jsAndCss = (transfers: Transfer[]) => transfers.filter((transfer) => transfer.type === 'script' || transfer.type === 'stylesheet');
const sum = (transfers: Transfer[]) => transfers.reduce((total, transfer) => total + transfer.bytes, 0);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

interface LighthouseRun {
  performance: number;
  accessibility: number;
  metrics: Record<string, number>;
  failedAccessibility: string[];
}

/** One Lighthouse run (its default: a mid-range phone on a slow 4G network, simulated) in a fresh headless Chromium. */
async function lighthouseRun(url: string): Promise<LighthouseRun> {
  const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM, chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
  try {
    const result = await lighthouse(url, { port: chrome.port, output: 'json', logLevel: 'error', onlyCategories: ['performance', 'accessibility'] });
    if (!result) throw new Error('Lighthouse returned no result');
    const { categories, audits } = result.lhr;
    const metric = (id: string) => Math.round(Number(audits[id]?.numericValue ?? NaN));
    return {
      performance: Math.round((categories.performance?.score ?? 0) * 100),
      accessibility: Math.round((categories.accessibility?.score ?? 0) * 100),
      metrics: {
        'FCP ms': metric('first-contentful-paint'),
        'LCP ms': metric('largest-contentful-paint'),
        'TBT ms': metric('total-blocking-time'),
        'SI ms': metric('speed-index'),
        'CLS ×1000': Math.round(Number(audits['cumulative-layout-shift']?.numericValue ?? NaN) * 1000),
      },
      failedAccessibility: (categories.accessibility?.auditRefs ?? [])
        .filter((ref) => ref.weight > 0 && audits[ref.id]?.score === 0)
        .map((ref) => ref.id),
    };
  } finally {
    chrome.kill();
  }
}

/**
 * The public chat's page on a phone: what its first load transfers (the
 * issue's absolute budget for JavaScript and CSS, beside the console's
 * sign-in page measured in the same run) and Lighthouse's mobile
 * Performance and Accessibility scores (median of five runs), against the
 * product as `npm start` serves it.
 */
export async function benchChatPage(engine: Engine, report: (result: BenchResult) => void): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  const served = await engine.serve({});
  try {
    const base = served.server.url;
    const chat = await firstLoad(`${base}/ui/chat`);
    const console_ = await firstLoad(`${base}/ui/admin/login`);
    const chatCode = jsAndCss(chat);
    const consoleCode = jsAndCss(console_);
    report({
      name: 'public chat first load: JavaScript and CSS transferred',
      measure: 'JS + CSS a phone downloads opening /ui/chat (compressed, headers included, until the network is quiet)',
      value: kb(sum(chatCode)),
      baseline: kb(sum(consoleCode)),
      baselineMeasure: "the console's first load (/ui/admin/login), same run",
      unit: 'KB',
      ratio: sum(chatCode) / sum(consoleCode),
      maxValue: CHAT_FIRST_LOAD_BUDGET_KB,
      notes: [
        ...chatCode.map((transfer) => `${path.basename(new URL(transfer.url).pathname)}: ${kb(transfer.bytes)} KB (${transfer.encoding})`),
        `everything /ui/chat transfers: ${kb(sum(chat))} KB in ${chat.length} responses (the page ${kb(sum(chat.filter((transfer) => transfer.type === 'document')))} KB)`,
        `the console's sign-in page: ${kb(sum(consoleCode))} KB of JS + CSS`,
      ],
    });

    const runs: LighthouseRun[] = [];
    for (let run = 0; run < RUNS; run++) runs.push(await lighthouseRun(`${base}/ui/chat`));
    const metricNotes = Object.keys(runs[0]!.metrics).map((name) => `${name}: median ${median(runs.map((run) => run.metrics[name]!))} (runs: ${runs.map((run) => run.metrics[name]).join(', ')})`);
    const performance = median(runs.map((run) => run.performance));
    const accessibility = median(runs.map((run) => run.accessibility));
    report({
      name: 'public chat Lighthouse mobile Performance',
      measure: `Lighthouse ${RUNS} runs on /ui/chat, median score (mobile, simulated slow 4G, headless Chromium)`,
      value: performance,
      baseline: PERFORMANCE_TARGET,
      baselineMeasure: 'the issue\'s target',
      unit: 'points',
      ratio: performance / PERFORMANCE_TARGET,
      minValue: PERFORMANCE_TARGET,
      notes: [`scores: ${runs.map((run) => run.performance).join(', ')}`, ...metricNotes],
    });
    const failed = [...new Set(runs.flatMap((run) => run.failedAccessibility))];
    report({
      name: 'public chat Lighthouse Accessibility',
      measure: `Lighthouse ${RUNS} runs on /ui/chat, median score`,
      value: accessibility,
      baseline: ACCESSIBILITY_TARGET,
      baselineMeasure: 'the issue\'s target',
      unit: 'points',
      ratio: accessibility / ACCESSIBILITY_TARGET,
      minValue: ACCESSIBILITY_TARGET,
      notes: [`scores: ${runs.map((run) => run.accessibility).join(', ')}`, ...(failed.length ? [`failed audits: ${failed.join(', ')}`] : [])],
    });
  } finally {
    await served.cleanup();
  }
}
