import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../config/env.ts';
import { ADMIN, createTestContext, signIn, testDatabaseKind, type TestContext } from '../test-support/test-context.ts';
import { runAdmin } from './admin.ts';

function io(ctx: TestContext, stdinText: string) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  return {
    io: { env: { DATABASE_URL: ctx.database.url }, databaseSchema: ctx.database.schema, stdin: Readable.from([stdinText]), stdout, stderr },
    output: () => ({ out, err }),
  };
}

describe('npm run admin -- reset-password', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  it('sets a new password and signs the admin out everywhere', async () => {
    const oldSession = await signIn(ctx.app);
    const run = io(ctx, 'a brand new passphrase\n');

    expect(await runAdmin(['reset-password', ADMIN.username], run.io)).toBe(0);
    expect(run.output().out).toContain(`Password for ${ADMIN.username} changed`);

    const stale = await ctx.app.inject({ method: 'GET', url: '/api/logged_in', headers: { cookie: oldSession } });
    expect(stale.statusCode).toBe(401);
    const oldLogin = await ctx.app.inject({ method: 'POST', url: '/login', payload: ADMIN });
    expect(oldLogin.statusCode).toBe(401);
    const newLogin = await ctx.app.inject({
      method: 'POST',
      url: '/login',
      payload: { username: ADMIN.username, password: 'a brand new passphrase' },
    });
    expect(newLogin.statusCode).toBe(200);
  });

  it('clears the sign-in limits of every address and the account, and says so', async () => {
    await signIn(ctx.app);
    const wrong = { ...ADMIN, password: 'not the password' };
    const from = (address: string, payload: object) =>
      ctx.app.inject({ method: 'POST', url: '/login', payload, remoteAddress: address });
    // The admin's own address locked for this username, and the account delayed by guesses from elsewhere.
    for (let guess = 0; guess < 5; guess++) await from('198.51.100.20', wrong);
    for (let address = 1; address <= 10; address++) await from(`203.0.113.${address}`, wrong);
    expect((await from('198.51.100.20', ADMIN)).statusCode).toBe(429);
    expect((await from('198.51.100.21', ADMIN)).statusCode).toBe(429);

    const run = io(ctx, 'a brand new passphrase\n');
    expect(await runAdmin(['reset-password', ADMIN.username], run.io)).toBe(0);
    expect(run.output().out).toMatch(/Sign-in limits cleared \(\d+ per-address, per-account and per-device records\): every address and the account may sign in again at once/);

    const fresh = { username: ADMIN.username, password: 'a brand new passphrase' };
    expect((await from('198.51.100.20', fresh)).statusCode).toBe(200);
    expect((await from('198.51.100.21', fresh)).statusCode).toBe(200);
    expect(await ctx.deps.database.db.selectFrom('login_throttle').selectAll().where('failures', '>', 0).execute()).toEqual([]);
  });

  it('names an unknown admin and changes nothing', async () => {
    await signIn(ctx.app);
    const run = io(ctx, 'a brand new passphrase\n');
    expect(await runAdmin(['reset-password', 'nobody'], run.io)).toBe(1);
    expect(run.output().err).toContain('No admin named nobody');
    const login = await ctx.app.inject({ method: 'POST', url: '/login', payload: ADMIN });
    expect(login.statusCode).toBe(200);
  });

  it('refuses a password that is too short', async () => {
    await signIn(ctx.app);
    const run = io(ctx, 'short\n');
    expect(await runAdmin(['reset-password', ADMIN.username], run.io)).toBe(1);
    expect(run.output().err).toContain('Password must be 8 to 256 characters');
  });

  it('prints usage for an unknown command', async () => {
    const run = io(ctx, '');
    expect(await runAdmin(['make-admin', 'x'], run.io)).toBe(2);
    expect(run.output().err).toContain('Usage: npm run admin -- <command>');
    expect(run.output().err).toContain('reset-password <username>');
  });

  it.runIf(testDatabaseKind() === 'sqlite')('runs as a program with the password piped in', async () => {
    await signIn(ctx.app);
    const result = spawnSync(process.execPath, [path.join(REPO_ROOT, 'server/src/cli/admin.ts'), 'reset-password', ADMIN.username], {
      input: 'piped in passphrase\n',
      env: { ...process.env, DATABASE_URL: ctx.database.url },
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const login = await ctx.app.inject({ method: 'POST', url: '/login', payload: { username: ADMIN.username, password: 'piped in passphrase' } });
    expect(login.statusCode).toBe(200);
  });
});
