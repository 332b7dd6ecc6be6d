import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getMetricsFromIterator, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../config/env.ts';
import { startFixtureServer, type FixtureServer } from '../test-support/fixture-server.ts';
import { cookieFrom, createTestContext, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const TOKEN = 'a-long-metrics-token-for-tests';
const SCHEDULE = JSON.stringify([{ id: 'p1', title: 'Costume Contest', start: '2026-03-14T19:00:00-05:00', location: 'Main Stage' }]);

/** The exposition parsed by a Prometheus text-format parser (it throws on a malformed line). */
async function scrape(ctx: TestContext): Promise<PromMetrics> {
  const reply = await ctx.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(reply.statusCode).toBe(200);
  expect(reply.headers['content-type']).toContain('text/plain; version=0.0.4');
  return getMetricsFromIterator(reply.body.split('\n')[Symbol.iterator]());
}

const samples = (metrics: PromMetrics, name: string) => {
  const family = metrics[name];
  if (!family) throw new Error(`no metric ${name}`);
  return family.data;
};
const value = (metrics: PromMetrics, name: string, labels: Record<string, string> = {}) =>
  (samples(metrics, name) as PromData[]).find((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))?.value;
const histogram = (metrics: PromMetrics, name: string, labels: Record<string, string>) =>
  (samples(metrics, name) as PromHistogramData[]).find((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted));

describe('GET /metrics', () => {
  let fixtures: FixtureServer;
  let ctx: TestContext;
  const time = manualClock(new Date('2026-03-13T15:00:00Z'));
  beforeAll(async () => {
    fixtures = await startFixtureServer();
  });
  afterAll(() => fixtures.close());
  afterEach(() => ctx.close());

  it('follows Prometheus naming and carries the process, Node.js, request, answer, provider, crawler and queue figures', async () => {
    ctx = await createTestContext({ clock: time.clock, env: { METRICS_TOKEN: TOKEN, CRAWLER_URL: `${fixtures.url}/schedule.json` } });
    const admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    await uploadKnowledge(ctx.app, admin, 'notes.md', '# Info\n\nThe lost and found is at the registration desk.');

    // The schedule source fails twice, then works: the streak ends, the last failure is remembered.
    fixtures.route('/schedule.json', { status: 500, body: 'down' });
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('failed');
    time.advance(60_000);
    const lastFailure = time.clock.now();
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('failed');
    let metrics = await scrape(ctx);
    expect(value(metrics, 'concierge_crawler_consecutive_failures')).toBe(2);
    expect(value(metrics, 'concierge_crawler_last_failure_timestamp_seconds')).toBe(lastFailure.getTime() / 1000);
    expect(value(metrics, 'concierge_crawler_last_success_timestamp_seconds')).toBe(0);

    fixtures.route('/schedule.json', { status: 200, body: SCHEDULE, contentType: 'application/json' });
    time.advance(60_000);
    const success = time.clock.now();
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('stored');
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('skipped'); // unchanged: still a success

    const visitor = cookieFrom(await ctx.app.inject({ method: 'POST', url: '/public/chat/turnstile/verify', payload: { token: '' } }));
    for (const question of ['Where is the lost and found?', 'When is the costume contest?']) {
      const reply = await ctx.app.inject({ method: 'POST', url: '/public/chat/send', payload: { message: question }, headers: { cookie: visitor } });
      expect(reply.statusCode).toBe(200);
    }
    await ctx.app.inject({ url: '/no/such/page/12345' });

    metrics = await scrape(ctx);

    // Naming: valid names, counters end in _total, our histograms are in seconds, nothing untyped.
    for (const [name, family] of Object.entries(metrics)) {
      expect(name).toMatch(/^[a-z_:][a-z0-9_:]*$/);
      expect(family.type, name).not.toBe('untyped');
      expect(family.help, name).not.toBe('');
      if (family.type === 'counter') expect(name, `${name} is a counter`).toMatch(/_total$/);
      // (prom-client's own nodejs_active_*_total gauges predate the rule; ours follow it.)
      if (family.type === 'gauge' && name.startsWith('concierge_')) expect(name, `${name} is a gauge`).not.toMatch(/_total$/);
      if (family.type === 'histogram' && name.startsWith('concierge_')) expect(name).toMatch(/_seconds$/);
    }

    // Default process and Node.js metrics.
    expect(metrics.process_cpu_user_seconds_total?.type).toBe('counter');
    expect(value(metrics, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(metrics.nodejs_eventloop_lag_seconds?.type).toBe('gauge');
    expect(value(metrics, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(value(metrics, 'concierge_build_info', { version: ctx.deps.version })).toBe(1);

    // Requests per route pattern, with latency; stray URLs share one label.
    const sent = { method: 'POST', route: '/public/chat/send', status_code: '200' };
    expect(value(metrics, 'concierge_http_requests_total', sent)).toBe(2);
    const sendLatency = histogram(metrics, 'concierge_http_request_duration_seconds', sent)!;
    expect(sendLatency.count).toBe(2);
    expect(sendLatency.buckets['+Inf']).toBe(2);
    expect(value(metrics, 'concierge_http_requests_total', { route: 'unmatched', status_code: '404' })).toBe(1);
    expect(JSON.stringify(samples(metrics, 'concierge_http_requests_total'))).not.toContain('12345');

    // Answers and provider calls, from the event bus.
    expect(value(metrics, 'concierge_answers_total', { source: 'public_chat', state: 'completed' })).toBe(2);
    expect(histogram(metrics, 'concierge_answer_duration_seconds', { source: 'public_chat', state: 'completed' })!.count).toBe(2);
    expect(value(metrics, 'concierge_assistant_tokens_total', { kind: 'prompt' })).toBeGreaterThan(0);
    expect(value(metrics, 'concierge_provider_calls_total', { step: 'create_run', outcome: 'success' })).toBe(2);
    expect(histogram(metrics, 'concierge_provider_call_duration_seconds', { step: 'create_run', outcome: 'success' })!.count).toBe(2);

    // The crawler: runs by outcome, and its health read from the database.
    expect(value(metrics, 'concierge_crawler_runs_total', { outcome: 'failed' })).toBe(2);
    expect(value(metrics, 'concierge_crawler_runs_total', { outcome: 'stored' })).toBe(1);
    expect(value(metrics, 'concierge_crawler_runs_total', { outcome: 'skipped' })).toBe(1);
    expect(value(metrics, 'concierge_crawler_consecutive_failures')).toBe(0);
    expect(value(metrics, 'concierge_crawler_last_success_timestamp_seconds')).toBe(success.getTime() / 1000);
    expect(value(metrics, 'concierge_crawler_last_failure_timestamp_seconds')).toBe(lastFailure.getTime() / 1000);

    // Stored figures and the queue.
    expect(value(metrics, 'concierge_public_chat_messages', { state: 'completed' })).toBe(4);
    expect(value(metrics, 'concierge_public_chat_answers_in_progress')).toBe(0);
    expect(value(metrics, 'concierge_queue_depth', { queue: 'ask_commands' })).toBe(0);
    expect(value(metrics, 'concierge_paused')).toBe(0);
    expect(value(metrics, 'concierge_leader')).toBe(0); // a test context never starts its leadership

    // Every metric the example Grafana dashboard queries is one the server exports.
    const dashboard = JSON.parse(readFileSync(path.join(REPO_ROOT, 'deploy/grafana-dashboard.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
    const queried = new Set(dashboard.panels.flatMap((panel) => panel.targets ?? []).flatMap((target) => target.expr.match(/\b(?:concierge|process|nodejs)_[a-z0-9_]+/g) ?? []));
    expect(queried.size).toBeGreaterThan(10);
    for (const name of queried) {
      const family = name.replace(/_(bucket|sum|count)$/, '');
      expect(metrics[name] ?? (metrics[family]?.type === 'histogram' ? metrics[family] : undefined), `dashboard queries ${name}`).toBeDefined();
    }

    // The same crawler record on /api/status.
    const status = (await ctx.app.inject({ url: '/api/status', headers: { cookie: admin } })).json();
    expect(status.crawler).toMatchObject({
      last_success_at: success.toISOString(),
      last_failure_at: lastFailure.toISOString(),
      consecutive_failures: 0,
      last_error: expect.stringContaining('500'),
    });
  });
});
