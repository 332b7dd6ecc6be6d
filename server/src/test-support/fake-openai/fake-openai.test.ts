import OpenAI, { NotFoundError, RateLimitError, toFile } from 'openai';
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

  it('can be tuned over HTTP while it runs', async () => {
    const reply = await fetch(fake.url.replace('/v1', '/__control'), { method: 'POST', body: JSON.stringify({ runDurationMs: 5, finalStatus: 'cancelled' }) });
    expect(reply.status).toBe(200);
    expect(fake.knobs).toMatchObject({ runDurationMs: 5, finalStatus: 'cancelled' });
  });
});
