import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { createTestContext, signIn, uploadKnowledge, type TestContext } from '../test-support/test-context.ts';
import { sanitizeFilename, UPLOAD_LIMITS } from './upload.ts';

const URL = '/api/openai/vector_store/upload';
const BOUNDARY = 'concierge-test-boundary';

/** A multipart body written by hand, so it can be wrong in every way a hostile client can make it. */
const part = (headers: string, content: string) => `--${BOUNDARY}\r\n${headers}\r\n\r\n${content}\r\n`;
const filePart = (name: string, content: string, field = 'file') =>
  part(`Content-Disposition: form-data; name="${field}"; filename="${name}"\r\nContent-Type: text/plain`, content);
const end = `--${BOUNDARY}--\r\n`;

describe('the upload route with malformed multipart', () => {
  let ctx: TestContext;
  let cookie: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const send = (payload: string | Buffer, contentType = `multipart/form-data; boundary=${BOUNDARY}`) =>
    ctx.app.inject({ method: 'POST', url: URL, headers: { cookie, 'content-type': contentType }, payload });

  const documents = () => ctx.deps.database.db.selectFrom('knowledge_documents').select('filename').where('kind', '=', 'upload').execute();

  it.each([
    ['a boundary the body does not use', `${filePart('faq.md', '# FAQ')}${end}`, 'multipart/form-data; boundary=another-boundary'],
    ['no boundary at all', `${filePart('faq.md', '# FAQ')}${end}`, 'multipart/form-data'],
    ['an empty boundary', `${filePart('faq.md', '# FAQ')}${end}`, 'multipart/form-data; boundary='],
    ['a part cut off before its end', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="faq.md"\r\n\r\n# FAQ, cut off`],
    ['a part header cut off', `--${BOUNDARY}\r\nContent-Disposition: form-da`],
    ['a malformed part header', `--${BOUNDARY}\r\nthis is no header\r\n\r\ncontent\r\n${end}`],
    ['no parts, only the closing boundary', end],
    ['an empty body', ''],
    ['garbage', '\u0000\u0001 not multipart at all'],
    ['a field but no file', `${part('Content-Disposition: form-data; name="note"', 'hello')}${end}`],
    ['the file in another field', `${filePart('faq.md', '# FAQ', 'document')}${end}`],
    ['a file part without a file name', `${part('Content-Disposition: form-data; name="file"\r\nContent-Type: text/plain', '# FAQ')}${end}`],
    ['two file parts', `${filePart('faq.md', '# FAQ')}${filePart('other.md', '# Other')}${end}`],
    ['the file field twice with one name', `${filePart('faq.md', '# FAQ')}${filePart('faq.md', '# FAQ again')}${end}`],
    ['too many fields', `${Array.from({ length: 8 }, (_, index) => part(`Content-Disposition: form-data; name="f${index}"`, 'x')).join('')}${filePart('faq.md', '# FAQ')}${end}`],
    ['a __proto__ field', `${part('Content-Disposition: form-data; name="__proto__"', 'x')}${filePart('faq.md', '# FAQ')}${end}`],
  ])('answers %s with a 4xx and a message, never a 500, and stores nothing', async (_name, payload, contentType?: string) => {
    const response = await send(payload, contentType);
    expect(response.statusCode, response.body).toBeGreaterThanOrEqual(400);
    expect(response.statusCode, response.body).toBeLessThan(500);
    expect(response.json<{ error: string }>().error.length).toBeGreaterThan(10);
    expect(await documents()).toEqual([]);
  });

  it.each([
    ['JSON', 'application/json', '{"file":"faq.md"}'],
    ['plain text', 'text/plain', '# FAQ'],
    ['a url-encoded form', 'application/x-www-form-urlencoded', 'file=faq.md'],
    ['an unknown type', 'application/octet-stream', 'binary'],
  ])('answers a %s body (wrong content type) with a 4xx naming multipart/form-data', async (_name, contentType, payload) => {
    const response = await send(payload, contentType);
    expect(response.statusCode).toBeGreaterThanOrEqual(400);
    expect(response.statusCode).toBeLessThan(500);
    expect(await documents()).toEqual([]);
  });

  // The parser skips a part whose headers have a bare line break, and one without a Content-Disposition. Such a part,
  // larger than the parser's part buffer (16 KB) and ending in the same chunk as the closing delimiter (one inject
  // payload, or a socket read of up to 64 KB), used to leave the request unanswered, holding one of the
  // route's upload places for good (multipart-finish.ts).
  const skipped = [
    ['a bare line break in its file name', 'Content-Disposition: form-data; name="file"; filename="\n"\r\nContent-Type: text/plain'],
    ['no Content-Disposition', 'Content-Type: text/plain'],
  ] as const;
  it.each(skipped)('answers a 100 KB part the parser skips (%s) with a 400, at once', async (_name, headers) => {
    const response = await send(`${part(headers, 'é'.repeat(50_000))}${end}`);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json<{ code: string }>().code).toBe('file_required');
    expect(await documents()).toEqual([]);
  });

  it('still takes a well-formed upload', async () => {
    const response = await send(`${filePart('faq.md', '# FAQ\n\nQ: Where is the cloakroom?\nBy the entrance.')}${end}`);
    expect(response.statusCode, response.body).toBe(200);
    expect(await documents()).toEqual([{ filename: 'faq.md' }]);
    expect((await uploadKnowledge(ctx.app, cookie, 'venue.txt', 'Hall B is upstairs.')).statusCode).toBe(200);
  });
});

describe('sanitizeFilename', () => {
  it.each([
    ['report\u202Ecod.md', 'reportcod.md'],
    ['\u2067invoice\u2069\u200B.txt', 'invoice.txt'],
    ['<img src=x onerror=alert(1)>.md', 'img src=x onerror=alert(1).md'],
    ['"quoted" & \'single\' `tick`.txt', 'quoted  single tick.txt'.replace('  ', ' ')],
    ['../../etc/passwd.md', 'passwd.md'],
    ['C:\\Users\\me\\faq.md', 'faq.md'],
    ['tab\tand\nnewline\u0007.md', 'tab and newline.md'],
    ['..hidden.md', 'hidden.md'],
    ['\u202E', ''],
    ['caf\u0065\u0301.md', 'caf\u00e9.md'],
  ])('%j is stored as %j', (raw, stored) => {
    expect(sanitizeFilename(raw)).toBe(stored);
  });

  it('keeps the extension when it shortens a long name', () => {
    const long = sanitizeFilename(`${'x'.repeat(500)}.md`);
    expect(long).toHaveLength(UPLOAD_LIMITS.maxFilenameLength);
    expect(long.endsWith('.md')).toBe(true);
  });
});

describe('upload content and names', () => {
  let ctx: TestContext;
  let cookie: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const storedNames = async () =>
    (await ctx.deps.database.db.selectFrom('knowledge_documents').select('filename').where('kind', '=', 'upload').orderBy('filename').execute()).map((row) => row.filename);

  it('stores file names without bidi overrides, control or HTML characters, and lists and serves them so', async () => {
    const trick = await uploadKnowledge(ctx.app, cookie, 'faq\u202Edm.txt', 'Q: Where?\nHere.');
    expect(trick.statusCode, trick.body).toBe(200);
    expect(trick.json()).toMatchObject({ filename: 'faqdm.txt' });
    const markup = await uploadKnowledge(ctx.app, cookie, "<img src=x onerror='alert(1)'>venue.md", '# Venue');
    expect(markup.statusCode, markup.body).toBe(200);
    expect(await storedNames()).toEqual(['faqdm.txt', 'img src=x onerror=alert(1)venue.md']);
    const listed = await ctx.app.inject({ url: '/api/knowledge', headers: { cookie } });
    expect(listed.body).not.toMatch(/[<>\u202E]/);
  });

  it('refuses a name that hides another type behind a right-to-left override', async () => {
    const exe = await uploadKnowledge(ctx.app, cookie, 'schedule\u202Etxt.exe', 'MZ');
    expect(exe.statusCode).toBe(415);
    expect(await storedNames()).toEqual([]);
  });

  it.each([
    ['a NUL byte in a .txt', 'notes.txt', Buffer.from('hello\u0000world')],
    ['invalid UTF-8 in a .md', 'faq.md', Buffer.from([0x23, 0x20, 0xff, 0xfe, 0x41])],
    ['UTF-16 text (BOM and NULs)', 'faq.txt', Buffer.from('\ufeffhello', 'utf16le')],
    ['a PNG named .csv', 'rooms.csv', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00])],
    ['a sequence cut off at the end', 'faq.md', Buffer.concat([Buffer.from('# caf'), Buffer.from([0xc3])])],
    ['binary after 1 MB of text', 'big.txt', Buffer.concat([Buffer.alloc(1024 * 1024, 'a'), Buffer.from([0x00, 0x01])])],
  ])('refuses %s with a 400 naming the file, storing nothing', async (_name, filename, content) => {
    const response = await uploadKnowledge(ctx.app, cookie, filename, content);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({ code: 'not_text', field: 'file', error: `${filename} is not text: a ${filename.slice(filename.lastIndexOf('.'))} file must be UTF-8 text, and this one has binary content` });
    expect(await storedNames()).toEqual([]);
  });

  it('takes UTF-8 text whose multi-byte characters straddle the chunks it arrives in', async () => {
    const text = 'Café ☕ 𝄞 — ü\n'.repeat(100_000); // ~1.9 MB: many chunk boundaries fall inside a character
    const response = await uploadKnowledge(ctx.app, cookie, 'utf8.md', text);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ bytes: Buffer.byteLength(text) });
  });
});

describe('uploads in flight', () => {
  let ctx: TestContext;
  let cookie: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  /** An upload whose body the test finishes when it likes, so it stays in flight until then. */
  function slowUpload(name: string) {
    const body = new PassThrough();
    body.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n# ${name}\n`);
    const reply = ctx.app.inject({ method: 'POST', url: URL, headers: { cookie, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, payload: body });
    return { reply, finish: () => body.end(`more text\r\n${end}`), cut: () => body.end('cut off') };
  }

  it(`receives at most ${UPLOAD_LIMITS.maxInFlight} at once: one more gets a 503 with Retry-After at once, and the places come back`, async () => {
    const slow = Array.from({ length: UPLOAD_LIMITS.maxInFlight }, (_, index) => slowUpload(`slow-${index}.md`));
    await new Promise((resolve) => setTimeout(resolve, 200));

    const refused = await uploadKnowledge(ctx.app, cookie, 'one-more.md', '# One more');
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toEqual({ error: `${UPLOAD_LIMITS.maxInFlight} uploads are already in progress; try again in a moment`, code: 'uploads_busy' });

    // One upload is cut off (a 400), the others complete: every place is given back either way.
    slow[0]!.cut();
    for (const upload of slow.slice(1)) upload.finish();
    const statuses = await Promise.all(slow.map(async (upload) => (await upload.reply).statusCode));
    expect(statuses).toEqual([400, ...Array(UPLOAD_LIMITS.maxInFlight - 1).fill(200)]);

    const again = await Promise.all(Array.from({ length: UPLOAD_LIMITS.maxInFlight }, (_, index) => uploadKnowledge(ctx.app, cookie, `again-${index}.md`, '# Again')));
    expect(again.map((reply) => reply.statusCode)).toEqual(Array(UPLOAD_LIMITS.maxInFlight).fill(200));
  });
});

describe('uploads to OpenAI (which would take any bytes)', () => {
  let fake: FakeOpenAI;
  let ctx: TestContext;
  let cookie: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  beforeEach(async () => {
    ctx = await createTestContext({ env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-5-mini' } });
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const fileUploads = () => fake.journal.filter((entry) => entry.path === '/v1/files' && entry.method === 'POST').length;

  it('refuses binary content under a text type, and a PDF or Word name on other content, before the provider sees it', async () => {
    const before = fileUploads();
    const binary = await uploadKnowledge(ctx.app, cookie, 'faq.txt', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00]));
    expect(binary.statusCode).toBe(400);
    expect(binary.json()).toMatchObject({ code: 'not_text' });
    const pdf = await uploadKnowledge(ctx.app, cookie, 'map.pdf', 'this is not a PDF at all');
    expect(pdf.statusCode).toBe(400);
    expect(pdf.json()).toEqual({ code: 'content_mismatch', field: 'file', error: 'map.pdf is not a PDF file' });
    const docx = await uploadKnowledge(ctx.app, cookie, 'guide.docx', Buffer.from([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]));
    expect(docx.statusCode).toBe(400);
    expect(docx.json()).toMatchObject({ code: 'content_mismatch', error: 'guide.docx is not a Word (.docx) file' });
    expect(fileUploads()).toBe(before);

    const real = await uploadKnowledge(ctx.app, cookie, 'map.pdf', '%PDF-1.4\n% a small PDF\n');
    expect(real.statusCode, real.body).toBe(200);
    expect(fileUploads()).toBe(before + 1);
  });
});
