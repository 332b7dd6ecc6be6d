import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError, refusal } from '../errors.ts';
import { registerErrorHandler } from './errors.ts';
import { RequestLog } from './request-log.ts';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A real Fastify app logging through RequestLog into `lines`, with the product's error handler. */
function appLoggingTo(lines: Line[], level: 'debug' | 'info', summaryMs = 60_000): { app: FastifyInstance; requestLog: RequestLog } {
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  const requestLog = new RequestLog(logger, { summaryMs });
  const app = Fastify({ loggerInstance: logger, logController: requestLog }) as unknown as FastifyInstance;
  registerErrorHandler(app);
  app.addHook('onClose', async () => requestLog.flush());
  let busy = 0;
  app.get('/ask', async () => {
    if (++busy <= 3) throw refusal('busy', 'Too many questions right now');
    return { ok: true };
  });
  app.get('/paused', async () => {
    throw refusal('paused', 'Paused');
  });
  app.get('/broken', async () => {
    throw new AppError(500, 'internal_error', 'It broke');
  });
  return { app, requestLog };
}

describe('RequestLog', () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it('writes one line per request, and sums up the refusals by design instead of a line each', async () => {
    const lines: Line[] = [];
    ({ app } = appLoggingTo(lines, 'info'));
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/ask' })).statusCode).toBe(503);
    expect((await app.inject({ url: '/ask' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/paused' })).statusCode).toBe(503);
    expect((await app.inject({ url: '/broken' })).statusCode).toBe(500);

    // The answered request has its line, the fault its error; no line per refusal.
    expect(lines.filter((line) => line.msg === 'request completed').map((line) => [line.route, line.status])).toEqual([
      ['/ask', 200],
      ['/broken', 500],
    ]);
    expect(lines.some((line) => line.msg === 'It broke' && line.level === 50)).toBe(true);
    expect(lines.some((line) => line.msg === 'request refused')).toBe(false);

    await app.close();
    app = undefined;
    const summary = lines.find((line) => String(line.msg).includes('refused by design'));
    expect(summary).toMatchObject({
      level: 40,
      total: 4,
      refused: [
        { method: 'GET', route: '/ask', status: 503, code: 'busy', count: 3 },
        { method: 'GET', route: '/paused', status: 503, code: 'paused', count: 1 },
      ],
    });
    expect(summary!.msg).toMatch(/^4 requests refused by design \(busy, paused…\) since \d{4}-\d\d-\d\dT/);
  });

  it('writes each refusal at debug, and the summary once its interval has passed', async () => {
    const lines: Line[] = [];
    ({ app } = appLoggingTo(lines, 'debug', 50));
    await app.inject({ url: '/paused' });
    expect(lines.filter((line) => line.msg === 'request refused')).toMatchObject([{ level: 20, route: '/paused', status: 503, code: 'paused' }]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    // Only pauses: the operator's own doing, at info.
    expect(lines.filter((line) => String(line.msg).includes('refused by design'))).toMatchObject([{ level: 30, total: 1 }]);
    expect(lines.find((line) => String(line.msg).includes('refused by design'))!.msg).toMatch(/^1 request refused/);
  });
});
