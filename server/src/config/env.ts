import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The repository root (two levels above this file's folder). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * V8 options the server is started with (spelt out in package.json's start and
 * bench scripts and deploy/concierge.service; the tests' server processes
 * take it from here): a young generation of at most 2 × 16 MB.
 * Node 24 lets it grow to 2 × 64 MB on a machine with this much memory,
 * and a burst of thousands of requests fills it: the server's RSS peaked at
 * 541 MB in the 10,000-question burst with the default. With 16 MB the
 * burst's peak was no higher than with 8 (412–544 MB in four runs, against
 * 436–500 in three, on the same machine the same hour), and the hot path
 * makes half the scavenges: 0.85–0.88× the bare route's answers a second on
 * SQLite instead of 0.80–0.83× (bench/RESULTS.md). V8 rounds the size to a
 * power of two (12 behaves as 16). It reads it only at start-up, so it is
 * given on the command line, not set from inside.
 *
 * `--no-minor-gc-task`: V8 otherwise posts a task to scavenge once the young
 * generation is 80 % full, and the server's event loop, turning over between
 * the query thread's replies, runs it before the generation is full: on the
 * hot path four scavenges in five came from that task, 200–207 a round
 * against the bare route's 155–159. Without it a scavenge comes when the
 * generation is full: 183–189 a round, 15 % less time collecting, and
 * 0.81× the bare route's answers a second on SQLite instead of 0.77×
 * (medians of nine rounds each; rounds spread by 0.1–0.2, so a run of three
 * can show less: bench/RESULTS.md). The young generation's bound, and so
 * the burst's peak RSS, are the same.
 */
export const SERVER_NODE_OPTIONS = ['--max-semi-space-size=16', '--no-minor-gc-task'];

/**
 * The environment the server process is started with (spelt out in the same
 * places as SERVER_NODE_OPTIONS). `MALLOC_ARENA_MAX=4`: glibc gives each
 * thread that allocates (V8's garbage-collection helpers, the health port's
 * and the checkpoint's threads, libuv's pool) a malloc arena of its own, up
 * to 8 per core, and each keeps the memory it freed. In the 10,000-question
 * burst on SQLite the peak RSS was 484–552 MB in seven runs with glibc's
 * default and 442–498 MB in three with 4 (452–483 MB in five with 2, which
 * also raised the chat bench's p99 from 1.5–2.0× to 2.0–2.1× the bare
 * route's; bench/RESULTS.md). glibc reads it only at start-up; other C
 * libraries ignore it.
 */
export const SERVER_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '4' };

/** The made-up convention schedule shipped with the product, used until CRAWLER_URL is set. */
export const BUNDLED_SCHEDULE_PATH = path.join(REPO_ROOT, 'server/sample-data/schedule.ics');

const optionalText = z.string().trim().min(1).optional();

const httpUrl = z
  .string()
  .trim()
  .refine((value) => /^https?:\/\/\S+$/i.test(value), { message: 'must be an http(s) URL' });

const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

/** Fastify's `trustProxy`: true, a hop count, or a list of addresses/CIDRs. */
export type TrustProxy = boolean | number | string[];

/**
 * DESIGN §9: `true` trusts every hop; a whole number N trusts N hops (so `1`,
 * one proxy in front, takes the address that proxy saw and ignores whatever a
 * client wrote into X-Forwarded-For itself); a list trusts those proxies only.
 * `1` is a hop count, never a yes: reading it as "trust everything" would let
 * any visitor choose their own address.
 */
const trustProxy = z
  .string()
  .trim()
  .transform((value, ctx): TrustProxy => {
    const lower = value.toLowerCase();
    if (['true', 'yes', 'on'].includes(lower)) return true;
    if (['false', 'no', 'off', '0'].includes(lower)) return false;
    if (/^\d+$/.test(value)) return Number(value);
    const list = value.split(',').map((part) => part.trim()).filter(Boolean);
    if (list.every((part) => /^[0-9a-f:.]+(\/\d{1,3})?$/i.test(part) || ['loopback', 'linklocal', 'uniquelocal'].includes(part))) {
      return list;
    }
    ctx.addIssue({ code: 'custom', message: 'must be true/false, a hop count, or a comma-separated list of addresses/CIDRs' });
    return z.NEVER;
  });

/**
 * EMBED_ORIGINS: the sites that may frame the chat (its embed snippet), as
 * origins (`https://con.example.org`, no path), comma-separated.
 */
const embedOrigins = z
  .string()
  .trim()
  .transform((value, ctx): string[] => {
    const origins: string[] = [];
    for (const part of value.split(',').map((item) => item.trim()).filter(Boolean)) {
      let origin: string | null = null;
      try {
        const url = new URL(part);
        const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !part.endsWith('#') && !part.endsWith('?');
        if ((url.protocol === 'http:' || url.protocol === 'https:') && bare) origin = url.origin;
      } catch {
        // Reported below.
      }
      if (!origin) {
        ctx.addIssue({ code: 'custom', message: `"${part}" is not an origin: write scheme://host[:port], e.g. https://con.example.org` });
        return z.NEVER;
      }
      origins.push(origin);
    }
    return [...new Set(origins)];
  });

const databaseUrl = z
  .string()
  .trim()
  .refine((value) => /^sqlite:.+/.test(value) || /^postgres(ql)?:\/\/.+/.test(value), {
    message: 'must be sqlite:<path> or postgres://…',
  });

const EnvShape = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  /** A port of its own for `GET /healthz`, answered by a thread the main port's crowd cannot delay (health/health-port.ts). */
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  TLS_CERT_FILE: optionalText,
  TLS_KEY_FILE: optionalText,
  TRUST_PROXY: trustProxy.optional(),
  DATABASE_URL: databaseUrl.default('sqlite:./data/concierge.db'),
  /**
   * PostgreSQL only: connections in each of a process's two pools (its event loop's and its query thread's). At least
   * 2: a statement may be sent on the pool while a transaction holds one of its connections.
   */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(100).default(4),
  /**
   * PostgreSQL only: where the connections that must be sessions of their own connect (the leader's advisory lock, the
   * crawler's run lock, the LISTEN of cross-process events): PostgreSQL itself when DATABASE_URL is a pooler in
   * transaction mode, which would hand their locks and LISTEN to other clients' transactions. Unset: DATABASE_URL.
   */
  DATABASE_SESSION_URL: z
    .string()
    .trim()
    .refine((value) => /^postgres(ql)?:\/\/.+/.test(value), { message: 'must be postgres://…' })
    .optional(),
  SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: httpUrl.optional(),
  OPENAI_MODEL: z.string().trim().min(1).default('gpt-5-mini'),
  OPENAI_VECTOR_STORE_ID: optionalText,
  /** How long one call to OpenAI may take before the SDK gives up on it (and retries, with back-off). */
  OPENAI_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  TURNSTILE_SITE_KEY: optionalText,
  TURNSTILE_SECRET_KEY: optionalText,
  TURNSTILE_VERIFY_URL: httpUrl.default('https://challenges.cloudflare.com/turnstile/v0/siteverify'),
  DISCORD_TOKEN: optionalText,
  DISCORD_APPLICATION_ID: z.string().trim().regex(/^\d{17,20}$/, 'must be a Discord application id').optional(),
  DISCORD_API_URL: httpUrl.optional(),
  CRAWLER_URL: z.string().trim().min(1).default(BUNDLED_SCHEDULE_PATH),
  CONVENTION_TIMEZONE: z.string().trim().refine(isTimeZone, { message: 'must be an IANA time zone such as America/Chicago' }).optional(),
  COMMUNITY_URL: httpUrl.optional(),
  CONVENTION_URL: httpUrl.optional(),
  PRODUCT_NAME: z.string().trim().min(1).max(60).default('Con Concierge'),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  MAX_CONCURRENT_RUNS: z.coerce.number().int().min(1).max(10_000).default(100),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  WEB_DIST_DIR: z.string().trim().min(1).default(path.join(REPO_ROOT, 'web/dist')),
  EMBED_ORIGINS: embedOrigins.default([]),
});

/** Rules across variables, checked on the raw input so they are reported with the others. */
function crossChecks(input: Record<string, string>): string[] {
  const problems: string[] = [];
  const pair = (a: string, b: string) => {
    if (Boolean(input[a]) !== Boolean(input[b])) problems.push(`${input[a] ? b : a}: ${a} and ${b} must be set together`);
  };
  pair('TLS_CERT_FILE', 'TLS_KEY_FILE');
  pair('TURNSTILE_SITE_KEY', 'TURNSTILE_SECRET_KEY');
  for (const key of ['TLS_CERT_FILE', 'TLS_KEY_FILE']) {
    const file = input[key];
    if (file && !existsSync(file)) problems.push(`${key}: file not found: ${file}`);
  }
  if (input.HEALTH_PORT && input.HEALTH_PORT.trim() !== '0' && input.HEALTH_PORT.trim() === (input.PORT ?? '8080').trim()) {
    problems.push('HEALTH_PORT: must differ from PORT');
  }
  if (input.DATABASE_SESSION_URL && (input.DATABASE_URL ?? 'sqlite:').trim().startsWith('sqlite:')) {
    problems.push('DATABASE_SESSION_URL: only with a PostgreSQL DATABASE_URL');
  }
  if (input.DISCORD_TOKEN && !input.DISCORD_APPLICATION_ID) problems.push('DISCORD_APPLICATION_ID: is required when DISCORD_TOKEN is set');
  return problems;
}

export type Env = z.output<typeof EnvShape>;

export class EnvError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid environment:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'EnvError';
    this.problems = problems;
  }
}

/**
 * Parses the environment once at start-up. Empty values count as unset. Throws
 * an EnvError naming every bad variable, never just the first.
 */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const input: Record<string, string> = {};
  for (const key of Object.keys(EnvShape.shape)) {
    const value = source[key];
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  const result = EnvShape.safeParse(input);
  const problems = [
    ...(result.error?.issues.map((issue) => `${issue.path.join('.') || '(environment)'}: ${issue.message}`) ?? []),
    ...crossChecks(input),
  ];
  if (problems.length > 0 || !result.success) throw new EnvError(problems);
  return result.data;
}

/** True when the assistant talks to OpenAI rather than the embedded local provider. */
export const usesOpenAI = (env: Env) => Boolean(env.OPENAI_API_KEY);
/** Human verification can only be enabled when both Turnstile keys are configured. */
export const turnstileConfigured = (env: Env) => Boolean(env.TURNSTILE_SITE_KEY && env.TURNSTILE_SECRET_KEY);
