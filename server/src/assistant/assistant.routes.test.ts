import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';

describe('vector store endpoints', () => {
  let ctx: TestContext;
  let admin: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    admin = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  it('uploads a file, names it in the reply and lists it', async () => {
    const first = '# FAQ\n\nBadges are picked up at registration.';
    const second = '# FAQ\n\nBadges are picked up in Hall A.';
    const upload = await uploadKnowledge(ctx.app, admin, 'faq.md', first);
    expect(upload.statusCode).toBe(200);
    const body = upload.json();
    expect(body).toMatchObject({ success: true, filename: 'faq.md', bytes: first.length, replaced: [] });
    expect(body.message).toContain(`faq.md (${first.length} bytes)`);

    const again = await uploadKnowledge(ctx.app, admin, 'faq.md', second);
    expect(again.json().replaced).toEqual([body.file_id]);

    const list = await ctx.app.inject({ method: 'GET', url: '/api/openai/vector_stores', headers: { cookie: admin } });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toMatchObject({ provider: 'local', vector_stores: [{ file_count: 1 }], files: [{ filename: 'faq.md', bytes: second.length }] });
    const log = await ctx.deps.database.db.selectFrom('openai_vector_store_logs').select('operation').execute();
    expect(log.map((row) => row.operation)).toContain('upload_file');
  });

  it('refuses wrong types, empty files and missing files with a clear 4xx', async () => {
    const image = await uploadKnowledge(ctx.app, admin, 'map.png', Buffer.from([0x89, 0x50]));
    expect(image.statusCode).toBe(415);
    expect(image.json().error).toMatch(/^File type must be one of \.txt, \.md/);
    const empty = await uploadKnowledge(ctx.app, admin, 'empty.txt', '');
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe('File is empty');
    const json = await ctx.app.inject({ method: 'POST', url: '/api/openai/vector_store/upload', headers: { cookie: admin }, payload: { file: 'x' } });
    expect(json.statusCode).toBe(400);
    const binary = await uploadKnowledge(ctx.app, admin, 'fake.txt', Buffer.from([0x00, 0xff, 0xfe]));
    expect(binary.statusCode).toBe(400);
    expect(binary.json()).toMatchObject({ code: 'not_text', error: 'fake.txt is not text: a .txt file must be UTF-8 text, and this one has binary content' });
  });

  it('refuses a file over the size limit (413) without storing it', async () => {
    const huge = await uploadKnowledge(ctx.app, admin, 'huge.txt', Buffer.alloc(21 * 1024 * 1024, 'a'));
    expect(huge.statusCode).toBe(413);
    const list = await ctx.app.inject({ method: 'GET', url: '/api/openai/vector_stores', headers: { cookie: admin } });
    expect(list.json().files).toEqual([]);
  });

  it('needs an admin session', async () => {
    const upload = await uploadKnowledge(ctx.app, '', 'faq.md', 'x');
    expect(upload.statusCode).toBe(401);
  });
});
