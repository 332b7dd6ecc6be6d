import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, SERVER_ENVIRONMENT, SERVER_NODE_OPTIONS } from './config/env.ts';
import { openDatabase } from './db/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from './test-support/fake-openai/fake-openai.ts';
import { ADMIN, testDatabaseKind } from './test-support/test-context.ts';

const ENTRY = path.join(REPO_ROOT, 'bin/concierge.mjs');
const UNIT = path.join(REPO_ROOT, 'deploy/concierge.service');

/** `Key=value` lines of a systemd unit (later lines of the same key win, as in systemd for these keys). */
function unitSettings(text: string): Map<string, string> {
  const settings = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match) settings.set(match[1]!, match[2]!);
  }
  return settings;
}

/** A Node older than 24 on this machine (its own, often 20), if there is one. */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (Number(version.replace(/^v/, '').split('.')[0]) < 24) return candidate;
  }
  return undefined;
}

describe('running under a supervisor', () => {
  let fake: FakeOpenAI | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    fake = dir = undefined;
  });

  // One process on a file of its own: what a supervisor runs, not a database engine's test.
  it.runIf(testDatabaseKind() === 'sqlite')('SIGTERM to the direct entry lets an in-flight answer finish, then it exits 0', async () => {
    fake = await startFakeOpenAI({ knobs: { runDurationMs: 3000 } });
    dir = mkdtempSync(path.join(tmpdir(), 'concierge-supervised-'));
    const schedule = path.join(dir, 'schedule.json');
    writeFileSync(schedule, JSON.stringify([{ id: 'p1', title: 'Costume Contest', start: '2026-03-14T19:00:00-05:00', location: 'Main Stage' }]));
    const child = spawn(process.execPath, [ENTRY], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: `sqlite:${path.join(dir, 'concierge.db')}`,
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        CRAWLER_URL: schedule,
        WEB_DIST_DIR: path.join(dir, 'no-web-build'),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const logs: { msg?: string; url?: string }[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        logs.push(JSON.parse(line));
      } catch {
        logs.push({ msg: line });
      }
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const waitFor = async (condition: () => boolean, what: string) => {
      const deadline = Date.now() + 20_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };

    try {
      await waitFor(() => logs.some((line) => line.msg?.endsWith('is ready')), 'the server to be ready');
      const base = new URL(logs.find((line) => line.msg?.endsWith('is ready'))!.url!).origin;
      const post = (url: string, body: unknown, cookie = '') =>
        fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(body) });
      await post('/setup', { ...ADMIN, confirm_password: ADMIN.password });
      const admin = (await post('/login', ADMIN)).headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
      const patched = await fetch(`${base}/api/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', cookie: admin },
        body: JSON.stringify({ assistant_poll_interval: '200ms', assistant_max_poll_interval: '500ms' }),
      });
      expect(patched.status).toBe(200);
      const visitor = (await post('/public/chat/turnstile/verify', { token: '' })).headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');

      // A question whose run takes 3 s; SIGTERM arrives once the run has started.
      const answer = post('/public/chat/send', { message: 'When is the costume contest?' }, visitor);
      await waitFor(() => fake!.journal.some((entry) => entry.method === 'POST' && entry.path === '/v1/responses'), 'the run to start');
      const signalledAt = Date.now();
      child.kill('SIGTERM');
      await waitFor(() => logs.some((line) => line.msg?.startsWith('shutting down')), 'the shutdown to begin');

      // No new connections while it finishes.
      await expect(fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();

      const reply = await answer;
      expect(reply.status).toBe(200);
      expect(await reply.json()).toMatchObject({ success: true, error: null });
      expect(Date.now() - signalledAt).toBeGreaterThan(1000); // the run really was in flight

      expect(await exited).toEqual({ code: 0, signal: null });
      expect(logs.some((line) => line.msg === 'stopped')).toBe(true);

      // It exited once the answer was sent, not after a keep-alive timeout.
      expect(Date.now() - signalledAt).toBeLessThan(15_000);

      // The answer was stored before the process went away.
      const database = await openDatabase(`sqlite:${path.join(dir, 'concierge.db')}`);
      try {
        const question = await database.db.selectFrom('public_chat_messages').select(['state', 'response']).where('role', '=', 'user').executeTakeFirstOrThrow();
        expect(question.state).toBe('completed');
        expect(question.response).toBeTruthy();
      } finally {
        await database.close();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('ships a systemd unit that runs the direct entry and restarts after Kill', () => {
    const unit = unitSettings(readFileSync(UNIT, 'utf8'));
    const execStart = unit.get('ExecStart')!.split(/\s+/);
    // With the V8 options and the environment the server is measured with (bounded memory: RSS in a burst).
    expect(execStart).toEqual(['/opt/concierge/node_modules/.bin/node', ...SERVER_NODE_OPTIONS, '/opt/concierge/bin/concierge.mjs']);
    const environment = Object.entries(SERVER_ENVIRONMENT).map(([name, value]) => `${name}=${value}`);
    expect(unit.get('Environment')?.split(/\s+/)).toEqual(environment);
    // The same entry, in this repository, is what the SIGTERM test above runs.
    expect(existsSync(path.join(REPO_ROOT, path.relative('/opt/concierge', execStart.at(-1)!)))).toBe(true);
    // npm start runs the server with them too.
    const scripts = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.start).toBe(`${environment.join(' ')} node ${SERVER_NODE_OPTIONS.join(' ')} scripts/start.mjs`);
    // And npm run bench measures the server (started in its own process) with them.
    const bench = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'bench/package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(bench.bench).toBe(`${environment.join(' ')} node ${SERVER_NODE_OPTIONS.join(' ')} src/run.ts`);
    expect(existsSync(path.join(REPO_ROOT, 'node_modules/.bin/node'))).toBe(true);
    expect(unit.get('WorkingDirectory')).toBe('/opt/concierge');
    // Kill exits 0, so only Restart=always brings it back; systemctl stop still stops it.
    expect(unit.get('Restart')).toBe('always');
    expect(unit.get('KillSignal')).toBe('SIGTERM');
    // Longer than the 110 s answer ceiling and the server's own 120 s grace.
    expect(Number(unit.get('TimeoutStopSec'))).toBeGreaterThan(120);
    for (const hardening of ['NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'PrivateTmp', 'PrivateDevices', 'RestrictNamespaces', 'SystemCallFilter']) {
      expect(unit.has(hardening), hardening).toBe(true);
    }
  });

  it('refuses an older Node with a message naming Node 24 and npm start, not "Unknown file extension .ts"', () => {
    // The check itself, asked about Node 20 (runs on any machine).
    const check = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `import { nodeVersionProblem } from ${JSON.stringify(path.join(REPO_ROOT, 'scripts/node-version.mjs'))}; console.log(nodeVersionProblem('20.20.2', '/usr/bin/node') ?? 'none'); console.log(nodeVersionProblem(process.versions.node, process.execPath) ?? 'none')`],
      { encoding: 'utf8' },
    );
    const [older, current] = check.stdout.split('\n').reduce<string[]>((parts, line) => {
      if (line.startsWith('Con Concierge needs') || line === 'none') parts.push(line);
      else if (parts.length) parts[parts.length - 1] += `\n${line}`;
      return parts;
    }, []);
    expect(older).toContain('needs Node.js 24 or newer; this is Node.js 20.20.2');
    expect(older).toContain('`npm start`');
    expect(older).toContain('bin/concierge.mjs');
    expect(current!.trim()).toBe('none');
  });

  const oldNode = olderNode();
  it.runIf(oldNode !== undefined)(`starting with this machine's own older Node (${oldNode}) stops with that message`, () => {
    for (const entry of ['bin/concierge.mjs', 'scripts/start.mjs']) {
      const result = spawnSync(oldNode!, [path.join(REPO_ROOT, entry)], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 20_000 });
      expect(result.status, entry).toBe(1);
      expect(result.stderr, entry).toContain('Con Concierge needs Node.js 24 or newer');
      expect(result.stderr, entry).toContain('npm start');
      expect(result.stderr, entry).not.toContain('Unknown file extension');
    }
  });
});
