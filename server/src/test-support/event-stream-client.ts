import { createParser } from 'eventsource-parser';

/** One thing read from an event stream, with when it arrived. */
export type StreamEntry = { kind: 'event'; event: string; data: unknown; at: number } | { kind: 'comment'; text: string; at: number };

/**
 * A real HTTP client reading a server-sent event stream as a browser's
 * fetch would: the reply's status and headers, then each event and comment
 * as it arrives.
 */
export interface StreamedReply {
  status: number;
  headers: Headers;
  /** What has arrived so far (events and comments, in order). */
  entries: StreamEntry[];
  /** The JSON body of a reply that was not a stream (a refusal). */
  json: unknown;
  /** Settles when the stream ends. */
  ended: Promise<void>;
  /** Waits (polling) until an entry matching `predicate` has arrived. */
  waitFor(predicate: (entry: StreamEntry) => boolean, timeoutMs?: number): Promise<StreamEntry>;
  /** The `delta` texts and the `done` data. */
  deltas(): string[];
  done(): Record<string, unknown> | undefined;
  /** Drops the connection (a visitor's phone losing the Wi-Fi). */
  abort(): void;
}

export async function postForEvents(url: string, body: unknown, headers: Record<string, string> = {}): Promise<StreamedReply> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const entries: StreamEntry[] = [];
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  let json: unknown;
  let ended: Promise<void>;
  if (!isStream) {
    json = await response.json();
    ended = Promise.resolve();
  } else {
    const parser = createParser({
      onEvent: (message) => entries.push({ kind: 'event', event: message.event ?? 'message', data: JSON.parse(message.data), at: Date.now() }),
      onComment: (text) => entries.push({ kind: 'comment', text: text.trim(), at: Date.now() }),
    });
    ended = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        // Aborted by the test.
      }
    })();
  }
  return {
    status: response.status,
    headers: response.headers,
    entries,
    json,
    ended,
    async waitFor(predicate, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const found = entries.find(predicate);
        if (found) return found;
        if (Date.now() > until) throw new Error(`no matching stream entry within ${timeoutMs} ms; got ${JSON.stringify(entries)}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    deltas: () => entries.flatMap((entry) => (entry.kind === 'event' && entry.event === 'delta' ? [(entry.data as { text: string }).text] : [])),
    done: () => {
      const done = entries.find((entry) => entry.kind === 'event' && entry.event === 'done');
      return done?.kind === 'event' ? (done.data as Record<string, unknown>) : undefined;
    },
    abort: () => controller.abort(),
  };
}

/** Events of a stream, by name, in order (comments left out). */
export const eventNames = (reply: StreamedReply) => reply.entries.flatMap((entry) => (entry.kind === 'event' ? [entry.event] : []));
