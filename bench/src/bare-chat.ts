import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
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
 * look and back-off until a final status, conversations.items.list.
 */
export async function startBareChat(options: BareChatOptions): Promise<{ url: string; close(): Promise<void> }> {
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: 30_000, maxRetries: 3 });
  const conversations = new Map<string, string | null>();
  let answered = 0;
  const app = Fastify({ logger: false });

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
      try {
        let conversation = conversations.get(session) ?? null;
        if (!conversation) {
          conversation = (await client.conversations.create({ metadata: { source: 'con-concierge' } }).withResponse()).data.id;
          conversations.set(session, conversation);
        }
        await client.conversations.items.create(conversation, { items: [{ type: 'message', role: 'user', content: request.body.message }] }).withResponse();
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
        const items = (await client.conversations.items.list(conversation, { limit: 10, order: 'desc' }).withResponse()).data;
        const message = items.data.find((item) => item.type === 'message' && item.role === 'assistant');
        if (!message || message.type !== 'message') return reply.code(502).send({ success: false, error: 'no answer' });
        const { text, sources } = answerOf(message.content);
        return { success: true, response: text, feedback_id: ++answered, error: null, sources };
      } catch (error) {
        return reply.code(502).send({ success: false, error: error instanceof Error ? error.message : String(error) });
      }
    },
  );

  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

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
