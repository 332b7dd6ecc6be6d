import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/** How often the refusals by design are summed up in one line. */
export const REFUSAL_SUMMARY_MS = 10_000;

/** Requests the error handler answered with a refusal by design (busy, paused: refusal() in errors.ts), with its code. */
const refusals = new WeakMap<FastifyRequest, string>();

/** Notes that `request` was refused by design (the error handler calls it), so that its line goes into the summary. */
export function markRefusal(request: FastifyRequest, code: string): void {
  refusals.set(request, code);
}

/**
 * One log line per request, written when it completes, with the route
 * pattern rather than the raw URL.
 *
 * Refusals by design (busy, paused) are the exception. A crowd at the
 * opening-ceremony peak makes thousands a second, each one already counted
 * in the metrics (concierge_http_requests_total, by route and status). A
 * line each buried everything else in the log. It also cost the refused
 * requests' event loop as much as Fastify's routing (bench/RESULTS.md). So
 * each is written at debug only. At info, one line every REFUSAL_SUMMARY_MS
 * sums them up by route and code.
 */
export class RequestLog extends LogController {
  readonly #logger: Logger;
  readonly #summaryMs: number;
  /** Refusals since the last summary, by `method route status code`. */
  #refused = new Map<string, { method: string; route: string; status: number; code: string; count: number }>();
  /** When the first of them was refused. */
  #since = '';
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: Logger, options: { summaryMs?: number } = {}) {
    super();
    this.#logger = logger;
    this.#summaryMs = options.summaryMs ?? REFUSAL_SUMMARY_MS;
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0]!,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
    };
    if (error) {
      request.log.error({ ...line, err: error }, 'request failed');
      return;
    }
    const code = refusals.get(request);
    if (code === undefined) {
      request.log.info(line, 'request completed');
      return;
    }
    request.log.debug({ ...line, code }, 'request refused');
    const key = `${line.method} ${line.route} ${line.status} ${code}`;
    const counted = this.#refused.get(key);
    if (counted) counted.count++;
    else this.#refused.set(key, { method: line.method, route: line.route, status: line.status, code, count: 1 });
    if (!this.#timer) {
      this.#since = new Date().toISOString();
      this.#timer = setTimeout(() => this.flush(), this.#summaryMs);
      this.#timer.unref();
    }
  }

  /** Writes the summary of the refusals not summed up yet (the app calls it as it closes). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#refused.size === 0) return;
    const refused = [...this.#refused.values()];
    this.#refused = new Map();
    const total = refused.reduce((sum, entry) => sum + entry.count, 0);
    const message = `${total} ${total === 1 ? 'request' : 'requests'} refused by design (busy, paused…) since ${this.#since}`;
    // Busy means more askers than MAX_CONCURRENT_RUNS and its queue take: worth an operator's look. A pause is their own doing.
    if (refused.some((entry) => entry.code === 'busy')) this.#logger.warn({ refused, total }, message);
    else this.#logger.info({ refused, total }, message);
  }
}
