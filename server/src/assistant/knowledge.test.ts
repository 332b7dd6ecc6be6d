import path from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../config/env.ts';
import { createDeps } from '../deps.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { createTestContext, freshDatabase, manualClock, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

const GUIDE = '# Venue guide\n\nThe cloakroom is next to Gate B and costs 2 euros per item.\n';

describe('the Knowledge section: documents the assistant knows', () => {
  let ctx: TestContext;
  let admin: string;
  const time = manualClock(new Date('2026-03-14T20:00:00Z'));

  beforeAll(async () => {
    ctx = await createTestContext({ clock: time.clock });
    admin = await signIn(ctx.app);
    await ctx.deps.config.update({ assistant_poll_interval: '100ms' });
    expect((await ctx.deps.crawler.refresh(false)).kind).toBe('stored');
  });
  afterAll(() => ctx.close());

  const get = (url: string, cookie: string | null = admin) => ctx.app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
  const documents = async () => (await get('/api/knowledge')).json().documents as { id: number; kind: string; title: string; filename: string; bytes: number; provider: string; provider_status: string }[];
  const ask = async (question: string) => (await ctx.deps.assistant.ask({ sessionId: 'knowledge' }, null, question)).answer.text;

  it('lists the schedule and uploads with size, time and provider status; an upload under the same name replaces the old one', async () => {
    expect((await uploadKnowledge(ctx.app, admin, 'venue-guide.md', '# Venue guide\n\nOld text.\n')).statusCode).toBe(200);
    time.advance(60_000);
    expect((await uploadKnowledge(ctx.app, admin, 'venue-guide.md', GUIDE)).statusCode).toBe(200);
    const reply = await get('/api/knowledge');
    expect(reply.statusCode).toBe(200);
    expect(reply.json().provider).toBe('local');
    const listed = await documents();
    expect(listed).toHaveLength(2);
    expect(listed[0]).toMatchObject({ kind: 'schedule', title: 'Convention schedule', provider: 'local', provider_status: 'ready' });
    expect(listed[0]!.filename).toMatch(/^schedule-.*\.md$/);
    expect(listed[0]!.bytes).toBeGreaterThan(10_000);
    expect(listed[1]).toMatchObject({ kind: 'upload', title: 'Venue guide', filename: 'venue-guide.md', bytes: Buffer.byteLength(GUIDE), provider_status: 'ready' });
    expect((await ctx.deps.assistant.listFiles()).map((file) => file.filename).sort()).toEqual([listed[0]!.filename, 'venue-guide.md'].sort());
  });

  it('downloads a document as it was uploaded', async () => {
    const guide = (await documents()).find((document) => document.filename === 'venue-guide.md')!;
    const reply = await get(`/api/knowledge/${guide.id}/download`);
    expect(reply.statusCode).toBe(200);
    expect(reply.body).toBe(GUIDE);
    expect(reply.headers['content-type']).toContain('text/markdown');
    expect(reply.headers['content-disposition']).toContain('attachment; filename="venue-guide.md"');
  });

  it('deletes a document from the knowledge and the assistant stops answering from it', async () => {
    expect(await ask('Where is the cloakroom?')).toContain('next to Gate B');
    const guide = (await documents()).find((document) => document.filename === 'venue-guide.md')!;
    const reply = await ctx.app.inject({ method: 'DELETE', url: `/api/knowledge/${guide.id}`, headers: { cookie: admin } });
    expect(reply.statusCode).toBe(200);
    expect(reply.json().message).toContain('Venue guide');
    expect((await documents()).map((document) => document.filename)).not.toContain('venue-guide.md');
    expect((await ctx.deps.assistant.listFiles()).map((file) => file.filename)).not.toContain('venue-guide.md');
    expect(await ask('Where is the cloakroom?')).not.toContain('Gate B');
  });

  it('refuses anonymous callers, and names a bad or unknown id', async () => {
    expect((await get('/api/knowledge', null)).statusCode).toBe(401);
    expect((await get('/api/knowledge/1/download', null)).statusCode).toBe(401);
    expect((await ctx.app.inject({ method: 'DELETE', url: '/api/knowledge/1' })).statusCode).toBe(401);
    const bad = await get('/api/knowledge/abc/download');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toContain('id');
    expect((await get('/api/knowledge/999999/download')).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'DELETE', url: '/api/knowledge/999999', headers: { cookie: admin } })).statusCode).toBe(404);
  });
});

describe('switching provider', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  it('uploads the current schedule and the uploaded files to the new provider on start', async () => {
    const database = freshDatabase();
    const base = { DATABASE_URL: database.url, LOG_LEVEL: 'silent', WEB_DIST_DIR: path.join(tmpdir(), 'concierge-no-web-build') };
    const time = manualClock(new Date('2026-03-14T20:00:00Z'));

    // Offline first: the schedule and a guide.
    const offline = await createDeps(loadEnv(base), { clock: time.clock, databaseSchema: database.schema });
    expect((await offline.crawler.refresh(false)).kind).toBe('stored');
    await offline.knowledge.add({ kind: 'upload', filename: 'venue-guide.md', data: Buffer.from(GUIDE) });
    await offline.close();

    // Then OpenAI, on the same database: the feed is unchanged, yet both documents reach the new vector store.
    const online = await createDeps(loadEnv({ ...base, OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini' }), {
      clock: time.clock,
      databaseSchema: database.schema,
    });
    try {
      await online.knowledge.sync();
      expect((await online.crawler.refresh(false)).kind).toBe('skipped');
      const files = (await online.assistant.listFiles()).map((file) => file.filename).sort();
      expect(files).toHaveLength(2);
      expect(files).toContain('venue-guide.md');
      const documents = await online.knowledge.list();
      expect(documents.map((document) => [document.provider, document.provider_status])).toEqual([
        ['openai', 'ready'],
        ['openai', 'ready'],
      ]);
      // A second start finds them there and uploads nothing.
      const uploads = fake.journal.filter((entry) => entry.path === '/v1/files' && entry.method === 'POST').length;
      await online.knowledge.sync();
      expect(fake.journal.filter((entry) => entry.path === '/v1/files' && entry.method === 'POST').length).toBe(uploads);
    } finally {
      await database.dispose(online);
    }
  });
});
