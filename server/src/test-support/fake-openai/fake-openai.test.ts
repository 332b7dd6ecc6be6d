import OpenAI, { NotFoundError, RateLimitError, toFile } from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.ts';

describe('the fake OpenAI server speaks the wire protocol the SDK expects', () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  async function storeWith(filename: string, text: string) {
    const file = await client.files.create({ file: await toFile(Buffer.from(text), filename), purpose: 'assistants' });
    const store = await client.vectorStores.create({ name: 'knowledge' });
    await client.vectorStores.files.create(store.id, { file_id: file.id });
    return { file, store };
  }

  async function waitFor(id: string) {
    let response = await client.responses.retrieve(id);
    while (response.status === 'queued' || response.status === 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      response = await client.responses.retrieve(id);
    }
    return response;
  }

  it('runs a background response over a conversation with file_search and a citation', async () => {
    const { file, store } = await storeWith('faq.md', '# FAQ\nBadges are picked up at the registration desk in Hall A.\n');
    const conversation = await client.conversations.create({});
    await client.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'Where do I pick up badges?' }] });
    const created = await client.responses.create({
      model: 'gpt-5-mini',
      conversation: conversation.id,
      background: true,
      store: true,
      tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
    });
    expect(created.status).toBe('queued');
    const done = await waitFor(created.id);
    expect(done.status).toBe('completed');
    expect(done.usage?.total_tokens).toBeGreaterThan(0);

    const items = await client.conversations.items.list(conversation.id, { order: 'desc', limit: 5 });
    const answer = items.data[0]!;
    expect(answer).toMatchObject({ type: 'message', role: 'assistant' });
    const part = (answer as { content: { type: string; text: string; annotations: { type: string; file_id: string }[] }[] }).content[0]!;
    expect(part.text).toContain('registration desk in Hall A');
    expect(part.annotations).toEqual([expect.objectContaining({ type: 'file_citation', file_id: file.id, filename: 'faq.md' })]);
  });

  it('refuses what the real API refuses', async () => {
    await expect(client.responses.create({ model: 'gpt-5-mini', background: true, store: false, input: 'hi' })).rejects.toMatchObject({ status: 400 });
    await expect(client.responses.create({ model: 'gpt-5-mini' })).rejects.toMatchObject({ status: 400 });
    await expect(client.conversations.retrieve('conv_missing')).rejects.toBeInstanceOf(NotFoundError);
    const anonymous = new OpenAI({ apiKey: 'wrong', baseURL: fake.url, maxRetries: 0 });
    await expect(anonymous.conversations.create({})).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('injects 429s the SDK sees, and retries through them when allowed', async () => {
    fake.failNext({ path: '/v1/conversations', status: 429 });
    await expect(client.conversations.create({})).rejects.toBeInstanceOf(RateLimitError);
    fake.failNext({ path: '/v1/conversations', status: 500, count: 2 });
    const patient = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 2 });
    const conversation = await patient.conversations.create({});
    expect(conversation.id).toMatch(/^conv_/);
    expect(fake.journal.filter((entry) => entry.path === '/v1/conversations').length).toBe(4);
  });

  it('ends runs as failed or incomplete when told to', async () => {
    fake.configure({ finalStatus: 'failed' });
    const failed = await waitFor((await client.responses.create({ model: 'm', background: true, store: true, input: 'hello' })).id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    fake.configure({ finalStatus: 'incomplete' });
    const incomplete = await waitFor((await client.responses.create({ model: 'm', background: true, store: true, input: 'hello' })).id);
    expect(incomplete).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });

  it('replaces a file in a vector store', async () => {
    const { file, store } = await storeWith('schedule.md', 'old schedule');
    const replacement = await client.files.create({ file: await toFile(Buffer.from('new schedule'), 'schedule.md'), purpose: 'assistants' });
    await client.vectorStores.files.create(store.id, { file_id: replacement.id });
    await client.vectorStores.files.delete(file.id, { vector_store_id: store.id });
    await client.files.delete(file.id);
    const files = await client.vectorStores.files.list(store.id);
    expect(files.data.map((entry) => entry.id)).toEqual([replacement.id]);
  });

  it('streams a background response with the real event names, in order, with sequence numbers', async () => {
    const { file, store } = await storeWith('faq.md', '# FAQ\nBadges are picked up at the registration desk in Hall A.\n');
    const conversation = await client.conversations.create({});
    await client.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'Where do I pick up badges?' }] });
    const stream = await client.responses.create({
      model: 'gpt-5-mini',
      conversation: conversation.id,
      background: true,
      store: true,
      stream: true,
      tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
    });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    const message = types.indexOf('response.output_item.added', types.indexOf('response.file_search_call.completed'));
    expect(types.slice(message, message + 2)).toEqual(['response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const created = events[0] as Extract<ResponseStreamEvent, { type: 'response.created' }>;
    expect(created.response.status).toBe('queued');
    const deltas = events.filter((event): event is Extract<ResponseStreamEvent, { type: 'response.output_text.delta' }> => event.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(3);
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>;
    expect(deltas.map((event) => event.delta).join('')).toBe(completed.response.output_text);
    expect(completed.response.output_text).toContain('registration desk in Hall A');
    const done = events.find((event) => event.type === 'response.content_part.done') as Extract<ResponseStreamEvent, { type: 'response.content_part.done' }>;
    expect(done.part).toMatchObject({ type: 'output_text', annotations: [expect.objectContaining({ type: 'file_citation', file_id: file.id })] });
    // The answer joined the conversation, as with polling.
    const items = await client.conversations.items.list(conversation.id, { order: 'desc', limit: 1 });
    expect(items.data[0]).toMatchObject({ type: 'message', role: 'assistant' });
  });

  it('resumes a stream after any sequence number, and drops streams when told to', async () => {
    fake.configure({ deltaDelayMs: 5, dropStream: { afterEvents: 4 } });
    const first = await client.responses.create({ model: 'm', background: true, store: true, stream: true, input: 'Tell me about the masquerade and the parade' });
    const seen: ResponseStreamEvent[] = [];
    await expect(
      (async () => {
        for await (const event of first) seen.push(event);
      })(),
    ).rejects.toThrow();
    expect(seen).toHaveLength(4);
    const id = (seen[0] as Extract<ResponseStreamEvent, { type: 'response.created' }>).response.id;
    const rest = await client.responses.retrieve(id, { stream: true, starting_after: seen.at(-1)!.sequence_number });
    for await (const event of rest) seen.push(event);
    expect(seen.map((event) => event.sequence_number)).toEqual(seen.map((_, index) => index));
    expect(seen.at(-1)!.type).toBe('response.completed');
    expect(fake.journal.at(-1)).toMatchObject({ method: 'GET', path: `/v1/responses/${id}`, query: { stream: 'true', starting_after: '3' } });

    // From the start again, once it is over: every event, then the end.
    const replay = await client.responses.retrieve(id, { stream: true });
    const again: ResponseStreamEvent[] = [];
    for await (const event of replay) again.push(event);
    expect(again.map((event) => event.type)).toEqual(seen.map((event) => event.type));
  });

  it('ends a cancelled stream, and refuses to stream a response created without stream', async () => {
    fake.configure({ deltaDelayMs: 20 });
    const stream = await client.responses.create({ model: 'm', background: true, store: true, stream: true, input: 'one two three four five six seven eight nine ten' });
    const seen: ResponseStreamEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (event.type === 'response.output_text.delta' && seen.filter((other) => other.type === event.type).length === 2) {
        const cancelled = await client.responses.cancel((seen[0] as Extract<ResponseStreamEvent, { type: 'response.created' }>).response.id);
        expect(cancelled.status).toBe('cancelled');
      }
    }
    expect(seen.filter((event) => event.type === 'response.output_text.delta').length).toBeLessThan(5);
    expect(seen.some((event) => event.type === 'response.completed')).toBe(false);

    const plain = await client.responses.create({ model: 'm', background: true, store: true, input: 'hello' });
    await expect(client.responses.retrieve(plain.id, { stream: true })).rejects.toMatchObject({ status: 400 });
  });

  it('can be tuned over HTTP while it runs', async () => {
    const reply = await fetch(fake.url.replace('/v1', '/__control'), { method: 'POST', body: JSON.stringify({ runDurationMs: 5, finalStatus: 'cancelled' }) });
    expect(reply.status).toBe(200);
    expect(fake.knobs).toMatchObject({ runDurationMs: 5, finalStatus: 'cancelled' });
  });
});
