import { PassThrough } from 'node:stream';
import { CHAT_STREAM_EVENTS, type ChatReply } from '@concierge/contract';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import { isAppError } from '../errors.ts';
import type { ChatAnswer } from './chat.service.ts';

/** A comment line goes out at least this often while an answer streams, so proxies and phones keep the connection (DESIGN §9). */
export const KEEP_ALIVE_MS = 15_000;
const KEEP_ALIVE = ': keep-alive\n\n';
/** Why a stream's keep-alive stops (a reason of our own: an abort without one builds a DOMException and its stack, per answer). */
const STREAM_OVER = 'the answer stream is over';

/** The request asks for the answer as an event stream (`Accept: text/event-stream`). */
export function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.split(',').some((part) => part.split(';')[0]!.trim().toLowerCase() === 'text/event-stream');
}

/** The `done` of an answer that failed after the stream began: the text and code the JSON error body would carry. */
function failureReply(error: unknown): ChatReply {
  if (isAppError(error)) return { success: false, response: '', feedback_id: null, error: error.message, sources: [], code: error.code };
  return { success: false, response: '', feedback_id: null, error: 'Internal server error', sources: [], code: 'internal_error' };
}

/**
 * Sends an accepted question's answer as DESIGN §9's event stream:
 * `event: delta` / `data: {"text": …}` for each piece, then exactly one
 * `event: done` with the reply, a `: keep-alive` comment at the start and at
 * least every KEEP_ALIVE_MS. Each event is written as it comes (no
 * compression: the compress plugin leaves text/event-stream alone;
 * `X-Accel-Buffering: no` asks nginx not to hold it). A visitor who goes
 * away leaves the answer running: it is stored, and a retry picks it up.
 */
export function streamAnswer(request: FastifyRequest, reply: FastifyReply, answer: ChatAnswer, options: { clock: Clock; closing: () => boolean }): FastifyReply {
  const { clock } = options;
  const body = new PassThrough();
  const over = new AbortController();
  const write = (text: string) => {
    if (!body.writableEnded && !body.destroyed) body.write(text);
  };
  const event = (name: string, data: unknown) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);

  write(KEEP_ALIVE);
  void (async () => {
    while (!over.signal.aborted) {
      await clock.sleep(KEEP_ALIVE_MS, over.signal).catch(() => {});
      if (!over.signal.aborted) write(KEEP_ALIVE);
    }
  })();
  reply.raw.on('close', () => over.abort(STREAM_OVER));

  answer
    .follow((text) => event(CHAT_STREAM_EVENTS.delta, { text }))
    .catch((error: unknown) => {
      if (!isAppError(error) || error.status >= 500) request.log.warn({ err: error }, 'a streamed answer failed');
      return failureReply(error);
    })
    .then((done) => event(CHAT_STREAM_EVENTS.done, done))
    .finally(() => {
      over.abort(STREAM_OVER);
      // Once the server is closing, the connection ends with the stream (its headers left before anyone knew to say so),
      // so closing does not wait out the keep-alive timeout.
      const socket = reply.raw.socket;
      if (options.closing() && socket) reply.raw.once('finish', () => socket.destroySoon());
      body.end();
    });

  return reply
    .status(200)
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    .header('x-accel-buffering', 'no')
    .send(body);
}
