import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLED_SCHEDULE_PATH, EnvError, loadEnv, REPO_ROOT } from './env.ts';

function problemsOf(source: Record<string, string>): string[] {
  try {
    loadEnv(source);
  } catch (error) {
    if (error instanceof EnvError) return error.problems;
    throw error;
  }
  return [];
}

describe('environment', () => {
  it('runs on embedded defaults with nothing set', () => {
    const env = loadEnv({});
    expect(env).toMatchObject({
      PORT: 8080,
      HOST: '127.0.0.1',
      DATABASE_URL: 'sqlite:./data/concierge.db',
      CRAWLER_URL: BUNDLED_SCHEDULE_PATH,
      PRODUCT_NAME: 'Con Concierge',
      LOG_LEVEL: 'info',
    });
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expect(env.TRUST_PROXY).toBeUndefined();
  });

  it('treats empty values as unset', () => {
    const env = loadEnv({ PORT: '', OPENAI_API_KEY: '  ' });
    expect(env.PORT).toBe(8080);
    expect(env.OPENAI_API_KEY).toBeUndefined();
  });

  it('reads TRUST_PROXY as a flag, a hop count or a list of addresses', () => {
    expect(loadEnv({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    expect(loadEnv({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    // One proxy in front is one hop, not "trust every X-Forwarded-For entry".
    expect(loadEnv({ TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(loadEnv({ TRUST_PROXY: '0' }).TRUST_PROXY).toBe(false);
    expect(loadEnv({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).TRUST_PROXY).toEqual(['10.0.0.0/8', '127.0.0.1']);
  });

  it('reads EMBED_ORIGINS as a list of origins, refusing anything else by name', () => {
    expect(loadEnv({}).EMBED_ORIGINS).toEqual([]);
    expect(loadEnv({ EMBED_ORIGINS: 'https://Con.Example.org/, http://localhost:3000,https://con.example.org' }).EMBED_ORIGINS).toEqual([
      'https://con.example.org',
      'http://localhost:3000',
    ]);
    for (const bad of ['https://con.example.org/embed', 'con.example.org', 'ftp://con.example.org', 'https://con.example.org?x=1']) {
      expect(problemsOf({ EMBED_ORIGINS: bad }), bad).toEqual([expect.stringMatching(/^EMBED_ORIGINS: .* is not an origin/)]);
    }
  });

  it('reads DATABASE_POOL_SIZE, 4 unless set, refusing fewer than 2 connections', () => {
    expect(loadEnv({}).DATABASE_POOL_SIZE).toBe(4);
    expect(loadEnv({ DATABASE_POOL_SIZE: '12' }).DATABASE_POOL_SIZE).toBe(12);
    for (const bad of ['1', 'many', '2.5', '101']) expect(problemsOf({ DATABASE_POOL_SIZE: bad }), bad).toEqual([expect.stringMatching(/^DATABASE_POOL_SIZE: /)]);
  });

  it('reads DATABASE_SESSION_URL only beside a PostgreSQL DATABASE_URL', () => {
    const direct = 'postgres://concierge@db.internal:5432/concierge';
    expect(loadEnv({ DATABASE_URL: 'postgres://concierge@pgbouncer:6432/concierge', DATABASE_SESSION_URL: direct }).DATABASE_SESSION_URL).toBe(direct);
    expect(loadEnv({ DATABASE_URL: direct }).DATABASE_SESSION_URL).toBeUndefined();
    expect(problemsOf({ DATABASE_SESSION_URL: direct })).toEqual(['DATABASE_SESSION_URL: only with a PostgreSQL DATABASE_URL']);
    expect(problemsOf({ DATABASE_URL: direct, DATABASE_SESSION_URL: 'sqlite:./data/x.db' })).toEqual(['DATABASE_SESSION_URL: must be postgres://…']);
  });

  it('names every bad variable at once', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      DATABASE_URL: 'mysql://x',
      OPENAI_BASE_URL: 'not a url',
      CONVENTION_TIMEZONE: 'Mars/Olympus',
      TURNSTILE_SITE_KEY: 'site-key-only',
      TRUST_PROXY: 'sometimes?',
    });
    const named = problems.map((problem) => problem.split(':')[0]);
    expect(named).toEqual(
      expect.arrayContaining(['PORT', 'DATABASE_URL', 'OPENAI_BASE_URL', 'CONVENTION_TIMEZONE', 'TURNSTILE_SECRET_KEY', 'TRUST_PROXY']),
    );
    expect(problems.find((problem) => problem.startsWith('CONVENTION_TIMEZONE'))).toContain('IANA time zone');
  });

  it('requires the Discord application id with a Discord token', () => {
    expect(problemsOf({ DISCORD_TOKEN: 'abc' })).toEqual(['DISCORD_APPLICATION_ID: is required when DISCORD_TOKEN is set']);
  });

  it('takes a health port of its own, never the main port', () => {
    expect(loadEnv({ PORT: '9000', HEALTH_PORT: '9001' }).HEALTH_PORT).toBe(9001);
    expect(loadEnv({}).HEALTH_PORT).toBeUndefined();
    expect(problemsOf({ PORT: '9000', HEALTH_PORT: '9000' })).toEqual(['HEALTH_PORT: must differ from PORT']);
    expect(problemsOf({ HEALTH_PORT: '8080' })).toEqual(['HEALTH_PORT: must differ from PORT']);
    expect(problemsOf({ PORT: '0', HEALTH_PORT: '0' })).toEqual([]);
  });

  it('stops the server at start-up with a message naming the bad variables', () => {
    const result = spawnSync(process.execPath, [path.join(REPO_ROOT, 'server/src/main.ts')], {
      env: { PATH: process.env.PATH, PORT: 'nope', DATABASE_URL: 'oracle://db' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Invalid environment');
    expect(result.stderr).toContain('PORT');
    expect(result.stderr).toContain('DATABASE_URL');
  });
});
