import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyReply } from 'fastify';
import OpenAI from 'openai';

export interface BareChatOptions {
  apiKey: string;
  baseURL: string;
  model: string;
  vectorStoreId: string;
  /** The product's run instructions, so both send the same request bodies. */
  instructions: string;
  pollMs: number;
  maxPollMs: number;
}

const FINAL = new Set(['completed', 'failed', 'incomplete', 'cancelled', 'expired']);
const COOKIE = 'bare_chat';

type MessageContent = Extract<OpenAI.Conversations.ConversationItem, { type: 'message' }>['content'];

/**
 * The chat benchmark's baseline: the public chat's two routes on a bare
 * Fastify 5 server with no database and no product code. A session is an id
 * in a cookie and its conversation id in memory; a question makes the
 * provider calls the product makes, the same way, through the real `openai`
 * SDK: conversations.create on the session's first question,
 * conversations.items.create, responses.create (background, stored, on the
 * conversation, file_search), responses.retrieve polled with the same first
 * look and back-off until a final status, conversations.items.list of the
 * items after the question.
 * With `Accept: text/event-stream` it streams as the product does (DESIGN
 * §9): the response is created with `stream: true`, its text deltas are sent
 * on as `event: delta` as they come, and after `response.completed` the
 * answer is read with conversations.items.list and sent as `event: done`.
 */
export async function startBareChat(options: BareChatOptions): Promise<{ url: string; close(): Promise<void> }> {
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: 30_000, maxRetries: 3 });
  const conversations = new Map<string, string | null>();
  let answered = 0;
  const app = Fastify({ logger: false });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.post('/public/chat/turnstile/verify', async (_request, reply) => {
    const id = randomBytes(24).toString('base64url');
    conversations.set(id, null);
    void reply.header('set-cookie', `${COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax`);
    return { success: true, error: null };
  });

  app.post<{ Body: { message: string } }>(
    '/public/chat/send',
    { schema: { body: { type: 'object', required: ['message'], properties: { message: { type: 'string', minLength: 1, maxLength: 4000 } } } } },
    async (request, reply) => {
      const session = /(?:^|;\s*)bare_chat=([^;]+)/.exec(request.headers.cookie ?? '')?.[1];
      if (!session || !conversations.has(session)) return reply.code(401).send({ success: false, error: 'Session not initialized' });
      const streaming = (request.headers.accept ?? '').includes('text/event-stream');
      if (streaming) return streamAnswer(session, request.body.message, reply);
      try {
        const conversation = await conversationOf(session);
        const question = await ask(conversation, request.body.message);
        let run = (
          await client.responses
            .create({
              model: options.model,
              background: true,
              store: true,
              instructions: options.instructions,
              tools: [{ type: 'file_search', vector_store_ids: [options.vectorStoreId] }],
              truncation: 'auto',
              conversation,
            })
            .withResponse()
        ).data;
        let delay = options.pollMs;
        for (let polls = 0; !FINAL.has(run.status ?? 'in_progress'); polls++) {
          if (polls > 0) {
            await sleep(delay);
            delay = Math.min(options.maxPollMs, Math.round(delay * 1.5));
          }
          run = (await client.responses.retrieve(run.id).withResponse()).data;
        }
        if (run.status !== 'completed') return reply.code(502).send({ success: false, error: `run ended ${run.status}` });
        const items = (await client.conversations.items.list(conversation, answerAfter(question)).withResponse()).data;
        const message = items.data.find((item) => item.type === 'message' && item.role === 'assistant');
        if (!message || message.type !== 'message') return reply.code(502).send({ success: false, error: 'no answer' });
        const { text, sources } = answerOf(message.content);
        return { success: true, response: text, feedback_id: ++answered, error: null, sources };
      } catch (error) {
        return reply.code(502).send({ success: false, error: error instanceof Error ? error.message : String(error) });
      }
    },
  );

  /** The conversation of the session, created on its first question. */
  const conversationOf = async (session: string): Promise<string> => {
    let conversation = conversations.get(session) ?? null;
    if (!conversation) {
      conversation = (await client.conversations.create({ metadata: { source: 'con-concierge' } }).withResponse()).data.id;
      conversations.set(session, conversation);
    }
    return conversation;
  };

  /** The question added to the conversation; its item's id. */
  const ask = async (conversation: string, message: string): Promise<string | undefined> =>
    (await client.conversations.items.create(conversation, { items: [{ type: 'message', role: 'user', content: message }] }).withResponse()).data.data[0]?.id;

  /** The streamed reply: the same calls with the response's events followed instead of polled. */
  const streamAnswer = (session: string, message: string, reply: FastifyReply) => {
    const body = new PassThrough();
    const event = (name: string, data: unknown) => body.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    body.write(': keep-alive\n\n');
    void (async () => {
      try {
        const conversation = await conversationOf(session);
        const question = await ask(conversation, message);
        const stream = (
          await client.responses
            .create({
              model: options.model,
              background: true,
              store: true,
              stream: true,
              instructions: options.instructions,
              tools: [{ type: 'file_search', vector_store_ids: [options.vectorStoreId] }],
              truncation: 'auto',
              conversation,
            })
            .withResponse()
        ).data;
        let status = 'in_progress';
        for await (const streamed of stream) {
          if (streamed.type === 'response.output_text.delta') event('delta', { text: streamed.delta });
          else if (streamed.type === 'response.completed' || streamed.type === 'response.failed' || streamed.type === 'response.incomplete') {
            status = streamed.response.status ?? 'failed';
            break;
          }
        }
        if (status !== 'completed') throw new Error(`run ended ${status}`);
        const items = (await client.conversations.items.list(conversation, answerAfter(question)).withResponse()).data;
        const found = items.data.find((item) => item.type === 'message' && item.role === 'assistant');
        if (!found || found.type !== 'message') throw new Error('no answer');
        const { text, sources } = answerOf(found.content);
        event('done', { success: true, response: text, feedback_id: ++answered, error: null, sources });
      } catch (error) {
        event('done', { success: false, response: '', feedback_id: null, error: error instanceof Error ? error.message : String(error), sources: [] });
      } finally {
        body.end();
      }
    })();
    return reply
      .status(200)
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache, no-transform')
      .header('x-accel-buffering', 'no')
      .send(body);
  };

  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

/** The product's listing of an answer: the items after its question, oldest first. */
const answerAfter = (question: string | undefined) => (question ? { after: question, limit: 10, order: 'asc' as const } : { limit: 10, order: 'desc' as const });

function answerOf(content: MessageContent): { text: string; sources: { file_id: string; filename: string }[] } {
  const sources = new Map<string, { file_id: string; filename: string }>();
  const texts: string[] = [];
  for (const part of content) {
    if ('text' in part && typeof part.text === 'string' && part.text) texts.push(part.text);
    if (part.type !== 'output_text') continue;
    for (const annotation of part.annotations) {
      if (annotation.type === 'file_citation') sources.set(annotation.file_id, { file_id: annotation.file_id, filename: annotation.filename });
    }
  }
  return { text: texts.join('\n'), sources: [...sources.values()] };
}
