import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';

/**
 * Malformed and hostile requests for every route of the app, generated with
 * fast-check from Fastify's own route table and the OpenAPI description of
 * each route (field names and types), so a route added later is probed
 * without anyone keeping a list.
 */

/** What the generator knows about one route: its method, path pattern and declared fields. */
export interface RouteShape {
  method: string;
  url: string;
  /** Path parameters (`:id`). */
  params: string[];
  /** Query and body fields with their JSON Schema, from the OpenAPI description. */
  query: Record<string, JsonSchema>;
  body: Record<string, JsonSchema>;
  multipart: boolean;
}

type JsonSchema = { type?: string | string[]; enum?: unknown[]; items?: JsonSchema; properties?: Record<string, JsonSchema>; anyOf?: JsonSchema[]; format?: string };

export type Caller = 'anonymous' | 'admin' | 'forged';

export interface HostileRequest {
  route: RouteShape;
  caller: Caller;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** One line saying what was sent, for a failure report. */
  label: string;
}

/**
 * Routes a valid signed-in call may legitimately act on (stop the process,
 * forget every thread, pause answering): only ever called without a valid session.
 */
export const ACTION_ROUTES = new Set(['POST /api/quit', 'POST /api/clear_threads', 'POST /api/pause', 'POST /api/resume']);

/** Every route of the app with the fields its OpenAPI description declares. */
export async function routeShapes(app: FastifyInstance): Promise<RouteShape[]> {
  const document = (await app.inject({ url: '/api/openapi.json' })).json() as {
    paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema?: JsonSchema }[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>>;
  };
  return app.listRoutes().map(({ method, url }) => {
    const operation = document.paths[url.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[method.toLowerCase()];
    const query: Record<string, JsonSchema> = {};
    for (const parameter of operation?.parameters ?? []) if (parameter.in === 'query') query[parameter.name] = parameter.schema ?? {};
    const content = operation?.requestBody?.content ?? {};
    return {
      method,
      url,
      params: [...url.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]!),
      query,
      body: content['application/json']?.schema?.properties ?? {},
      multipart: 'multipart/form-data' in content,
    };
  });
}

// ---------------------------------------------------------------- values

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));

/** Strings that have broken things elsewhere: NUL, lone surrogates, bidi overrides, markup, paths, SQL. */
const NASTY = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '\u202eexe.txt',
  '\u202egnp.exe\u202c',
  'مرحبا بالعالم',
  'שלום \u200f(עולם)',
  '\u2066\u2067\u2068\u2069',
  '\ufeff',
  '\uffff',
  '𝕏😀👩‍👩‍👧',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  'javascript:alert(1)',
  '[x](javascript:alert(1))',
  "'; drop table admin_users; --",
  '../../../../etc/passwd',
  '%00',
  '%ED%A0%80',
  '\r\nSet-Cookie: x=1',
  '\t\n\r',
  '{{constructor.constructor("return process")()}}',
  '__proto__',
  'constructor',
  '1e309',
  '-0',
  'NaN',
  '9'.repeat(400),
  'null',
  'true',
];

/** One hostile string: a known-bad one, random code points with lone surrogates and controls, or a huge one. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 3, arbitrary: fc.string({ unit: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), loneSurrogate, fc.constantFrom('\u0000', '\u202e', '\n')), maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', 'é', '\u0000', '😀', '\ud800', '<', ' '), fc.integer({ min: 1_000, max: 300_000 }))
      .map(([unit, count]) => unit.repeat(count)),
  },
);

/** Ordinary text with one NUL, lone surrogate, bidi override or control character slipped in. */
const tainted: fc.Arbitrary<string> = fc
  .tuple(fc.string({ minLength: 1, maxLength: 40 }), fc.oneof(fc.constantFrom('\u0000', '\u202e', '\u0007', '\u001b[31m', '\ufffe'), loneSurrogate), fc.nat())
  .map(([text, bad, at]) => text.slice(0, at % (text.length + 1)) + bad + text.slice(at % (text.length + 1)));

/** A value of any JSON type, often not the one expected; sometimes deep. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom(0, -1, 1, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, -1e-308, 0.5) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: 2, max: 3_000 }).map((depth) => nested(depth)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

function nested(depth: number): unknown {
  let value: unknown = 'x';
  for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { a: value };
  return value;
}

/** A value that fits the field's declared type (enum member, string, number…), to get past validation into the handler. */
function plausibleValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.enum?.length) return fc.constantFrom(...schema.enum);
  if (schema.anyOf?.length) return fc.oneof(...schema.anyOf.map(plausibleValue));
  const type = [schema.type ?? 'string'].flat()[0];
  switch (type) {
    case 'integer':
      return fc.oneof(fc.integer({ min: -5, max: 50 }), fc.integer());
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? plausibleValue(schema.items) : hostileString, { maxLength: 4 });
    case 'object':
      return fc.dictionary(fc.string({ maxLength: 8 }), hostileString, { maxKeys: 3 });
    default:
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
      return fc.oneof(
        fc.string({ minLength: 1, maxLength: 60 }),
        tainted,
        hostileString,
        fc.constantFrom('1', 'yes', 'true', '2026-03-13T15:00:00Z', '2026-02-30'),
      );
  }
}

/**
 * The declared fields: mostly all plausible but one hostile (the shape that
 * gets past validation to the handler and the database), else each
 * plausible, hostile or left out; now and then stray fields, prototype keys among them.
 */
function fieldsOf(fields: Record<string, JsonSchema>): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(fields);
  const plausible = fc.tuple(...names.map((name) => plausibleValue(fields[name]!)));
  const oneHostile = names.length
    ? fc.tuple(plausible, fc.nat(names.length - 1), fc.oneof(tainted, hostileValue)).map(([values, at, bad]) => values.map((value, index) => (index === at ? bad : value)))
    : fc.constant([] as unknown[]);
  const mixed = fc.tuple(...names.map((name) => fc.oneof({ weight: 5, arbitrary: plausibleValue(fields[name]!) }, { weight: 3, arbitrary: hostileValue }, { weight: 2, arbitrary: fc.constant(undefined) })));
  const stray = fc.option(fc.array(fc.tuple(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'admin')), hostileValue), { minLength: 1, maxLength: 2 }), { freq: 6, nil: [] });
  return fc.tuple(fc.oneof({ weight: 3, arbitrary: oneHostile }, { weight: 2, arbitrary: mixed }, { weight: 1, arbitrary: plausible }), stray).map(([values, extra]) => {
    const result: Record<string, unknown> = {};
    names.forEach((name, index) => {
      if (values[index] !== undefined) result[name] = values[index];
    });
    for (const [name, value] of extra) Object.defineProperty(result, name, { value, enumerable: true, writable: true, configurable: true });
    return result;
  });
}

// ---------------------------------------------------------------- parts of a request

const hostilePathSegment = fc.oneof(
  fc.constantFrom('1', '0', '-1', '1.5', '1e3', '99999999999999999999', 'abc', '%00', '%ED%A0%80', '%E2%80%AE', '%2e%2e%2f%2e%2e', '..', '%', '%zz', 'x.ics', '%00.ics', '%3Cscript%3E.ics'),
  hostileString.filter((text) => text.length < 2_000).map((text) => encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '?'))),
  fc.integer({ min: 1, max: 20_000 }).map((length) => 'a'.repeat(length)),
);

/** Query-string text as a client could send it: duplicated keys, brackets, broken escapes, encoded NUL and surrogate halves. */
function queryOf(fields: Record<string, JsonSchema>): fc.Arbitrary<string> {
  const names = Object.keys(fields);
  const name = names.length ? fc.oneof(fc.constantFrom(...names), fc.constantFrom(...names).map((field) => `${field}[]`), hostileString.map(encodeLoose)) : hostileString.map(encodeLoose);
  const value = fc.oneof(
    fc.constantFrom('', '1', '0', '-1', 'true', 'abc', '%00', '%ED%A0%80', '%E0%A4%A', '%', '2026-03-13', 'desc', 'asc', '1e400', '%E2%80%AE'),
    fc.constantFrom(...names.length ? names : ['x']).chain((field) => plausibleValue(fields[field] ?? {}).map((plain) => encodeLoose(String(plain)))),
    hostileString.map(encodeLoose),
  );
  return fc.array(fc.tuple(name, fc.option(value, { nil: undefined })), { maxLength: 6 }).map((pairs) =>
    pairs.map(([key, val]) => (val === undefined ? key : `${key}=${val}`)).join('&'),
  );
}

/** Percent-encodes what a URL cannot carry, keeping lone surrogates as the raw UTF-8 bytes a hostile client sends. */
function encodeLoose(text: string): string {
  let out = '';
  for (const char of text.slice(0, 5_000)) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) out += `%ED%${(0xa0 + ((code >> 6) & 0x1f)).toString(16).toUpperCase()}%${(0x80 + (code & 0x3f)).toString(16).toUpperCase()}`;
    else out += encodeURIComponent(char);
  }
  return out;
}

type Body = { contentType?: string; body?: string | Buffer; label: string };

const JSON_TYPE = 'application/json';

function jsonBody(fields: Record<string, JsonSchema>): fc.Arbitrary<Body> {
  return fc.oneof(
    { weight: 6, arbitrary: fieldsOf(fields).map((value) => ({ contentType: JSON_TYPE, body: JSON.stringify(value), label: 'json fields' })) },
    { weight: 1, arbitrary: hostileValue.map((value) => ({ contentType: JSON_TYPE, body: JSON.stringify(value) ?? 'null', label: 'json of another type' })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('[', '{"a":'), fc.integer({ min: 100, max: 60_000 }))
        .map(([open, depth]) => ({ contentType: JSON_TYPE, body: open.repeat(depth) + (open === '[' ? ']' : '1}').repeat(depth), label: `json ${depth} deep` })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{',
        '{"message":',
        '{"a":1,"a":2}',
        '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}',
        '{"message":"hi","message":{"$gt":""}}',
        'nul\u0000l',
        '"\\ud800"',
        '{"x":"\\u0000"}',
        '\ufeff{}',
        'NaN',
        '1e999999',
        '[]',
        'null',
        '   ',
      ).map((body) => ({ contentType: JSON_TYPE, body, label: 'broken json' })),
    },
    { weight: 1, arbitrary: fc.integer({ min: 200_000, max: 400_000 }).map((size) => ({ contentType: JSON_TYPE, body: `{"message":"${'x'.repeat(size)}"}`, label: `json of ${size} bytes` })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ contentType: JSON_TYPE, body: Buffer.from(bytes), label: 'binary as json' })) },
  );
}

const BOUNDARY = 'fuzzboundary';

function multipartBody(): fc.Arbitrary<Body> {
  const part = (name: string, filename: string | null, content: string | Buffer, type = 'text/plain') =>
    Buffer.concat([
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename === null ? '' : `; filename="${filename}"`}\r\nContent-Type: ${type}\r\n\r\n`),
      Buffer.isBuffer(content) ? content : Buffer.from(content),
      Buffer.from('\r\n'),
    ]);
  const end = Buffer.from(`--${BOUNDARY}--\r\n`);
  const type = `multipart/form-data; boundary=${BOUNDARY}`;
  return fc.oneof(
    fc
      .tuple(fc.oneof(hostileString.map((text) => text.slice(0, 300)), fc.constantFrom('notes.txt', 'a.md', '.txt', 'x.pdf', '\u202etxt.exe', '<img src=x onerror=alert(1)>.txt', '../../x.txt')), hostileString.map((text) => text.slice(0, 50_000)))
      .map(([filename, content]) => ({ contentType: type, body: Buffer.concat([part('file', filename, content), end]), label: 'multipart file' })),
    fc.uint8Array({ maxLength: 400 }).map((bytes) => ({ contentType: type, body: Buffer.concat([part('file', 'bin.txt', Buffer.from(bytes), 'application/octet-stream'), end]), label: 'multipart binary file' })),
    fc.constantFrom(
      { contentType: type, body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nno end`, label: 'multipart without its end' },
      { contentType: type, body: `--${BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${BOUNDARY}--\r\n`, label: 'multipart part without a name' },
      { contentType: type, body: 'not multipart at all', label: 'multipart garbage' },
      { contentType: type, body: '', label: 'multipart empty' },
      { contentType: 'multipart/form-data', body: `--${BOUNDARY}--\r\n`, label: 'multipart without a boundary' },
      { contentType: 'multipart/form-data; boundary=', body: '----\r\n', label: 'multipart with an empty boundary' },
      { contentType: `multipart/form-data; boundary=${'b'.repeat(500)}`, body: `--${'b'.repeat(500)}--\r\n`, label: 'multipart with a long boundary' },
      { contentType: type, body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\ntext\r\n--${BOUNDARY}--\r\n`, label: 'multipart without a file' },
      { contentType: type, body: Buffer.concat([part('file', 'a.txt', 'one'), part('file', 'b.txt', 'two'), end]), label: 'multipart with two files' },
      { contentType: type, body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${'y'.repeat(300_000)}\r\n--${BOUNDARY}--\r\n`, label: 'multipart of 300 KB' },
    ),
  );
}

function otherBody(): fc.Arbitrary<Body> {
  return fc.oneof(
    fc.constant({ label: 'no body' }),
    fc.tuple(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'application/octet-stream', '*/*', 'json', ';;;', 'application/json, text/plain', 'text/event-stream'), hostileString.map((text) => text.slice(0, 20_000)))
      .map(([contentType, body]) => ({ contentType, body, label: `body as ${contentType}` })),
    hostileString.map((body) => ({ body: body.slice(0, 20_000), label: 'body without a content type' })),
  );
}

// ---------------------------------------------------------------- headers

const headerText = fc.oneof(
  fc.constantFrom('', 'x', '\u202eevil', 'Mozilla/5.0 <script>alert(1)</script>', '"><svg onload=alert(1)>', 'مرحبا', '😀'),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }).map((text) => text.replace(/[^\t\x20-\x7e\x80-\xff]/g, '')),
  fc.integer({ min: 1_000, max: 40_000 }).map((size) => 'h'.repeat(size)),
);

function headersFor(): fc.Arbitrary<Record<string, string>> {
  const some = fc.record(
    {
      'user-agent': headerText,
      origin: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('http://localhost', 'http://localhost:80') }, { weight: 1, arbitrary: fc.constantFrom('https://localhost', 'http://evil.example', 'null', 'not a url', 'http://[::1', '') }),
      referer: fc.constantFrom('http://localhost/ui/', 'http://evil.example/', 'javascript:alert(1)', '%'),
      accept: fc.constantFrom('text/event-stream', 'application/json', '*/*', 'text/html', ''),
      'accept-encoding': fc.constantFrom('br', 'gzip', 'deflate', 'identity;q=0', '*', 'br;q=abc'),
      'accept-language': headerText,
      'x-forwarded-for': fc.constantFrom('1.2.3.4', 'not-an-ip', '::1, 10.0.0.1', '999.1.1.1', ''),
      'x-forwarded-proto': fc.constantFrom('https', 'gopher', ''),
      cookie: fc.constantFrom('concierge_chat=forged', 'concierge_chat=', 'a=b; a=c', '=;', 'concierge_admin=x; concierge_admin=y', 'h'.repeat(30_000)),
      range: fc.constantFrom('bytes=0-1', 'bytes=999999-', 'bytes=abc'),
      'if-none-match': fc.constantFrom('*', '"x"', 'W/"1"'),
    },
    { requiredKeys: [] },
  );
  return fc.oneof({ weight: 1, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: some });
}

// ---------------------------------------------------------------- whole requests

/** A signed admin cookie that is not a session (a forged or stale one). */
const FORGED_COOKIE = 'concierge_admin=s%3Aforged.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

/**
 * One hostile request to one of `routes`: a caller (anonymous, the signed-in
 * admin, a forged session), a concrete URL, headers and a body. Action
 * routes (ACTION_ROUTES) never get the admin's session.
 */
export function hostileRequest(routes: RouteShape[], adminCookie: () => string): fc.Arbitrary<HostileRequest> {
  const weighted = routes.map((route) => {
    const fields = Object.keys(route.body).length + Object.keys(route.query).length + route.params.length;
    const weight = route.method === 'HEAD' ? 1 : fields > 0 || route.multipart ? 8 : 3;
    return { weight, arbitrary: fc.constant(route) };
  });
  return fc.oneof(...weighted).chain((route) => {
    const callers: Caller[] = ACTION_ROUTES.has(`${route.method} ${route.url}`) ? ['anonymous', 'forged'] : ['anonymous', 'admin', 'admin', 'forged'];
    const hasBody = !['GET', 'HEAD'].includes(route.method);
    const body: fc.Arbitrary<Body> = hasBody
      ? route.multipart
        ? fc.oneof({ weight: 3, arbitrary: multipartBody() }, { weight: 1, arbitrary: jsonBody(route.body) }, { weight: 1, arbitrary: otherBody() })
        : fc.oneof({ weight: 4, arbitrary: jsonBody(route.body) }, { weight: 1, arbitrary: otherBody() }, { weight: 1, arbitrary: multipartBody() })
      : fc.oneof({ weight: 4, arbitrary: fc.constant<Body>({ label: 'no body' }) }, { weight: 1, arbitrary: otherBody() });
    return fc
      .record({
        caller: fc.constantFrom(...callers),
        params: fc.tuple(...route.params.map(() => hostilePathSegment)),
        query: fc.option(queryOf(route.query), { freq: 2, nil: undefined }),
        headers: headersFor(),
        body,
        method: fc.oneof({ weight: 19, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'OPTIONS', 'TRACE', 'PROPFIND', 'DELETE') }),
      })
      .map(({ caller, params, query, headers, body: sent, method }) => {
        let index = 0;
        let url = route.url.replace(/:([A-Za-z_]+)/g, () => params[index++] ?? '1').replace('*', 'x');
        if (query !== undefined) url += `?${query}`;
        const all: Record<string, string> = { ...headers };
        if (sent.contentType !== undefined) all['content-type'] = sent.contentType;
        const cookies = [caller === 'admin' ? adminCookie() : caller === 'forged' ? FORGED_COOKIE : '', headers.cookie ?? ''].filter(Boolean);
        if (cookies.length) all.cookie = cookies.join('; ');
        else delete all.cookie;
        const label = `${caller} ${method} ${url.length > 160 ? `${url.slice(0, 160)}… (${url.length} chars)` : url} [${sent.label}${sent.body !== undefined ? `, ${sent.body.length} bytes` : ''}] headers: ${Object.keys(headers).join(',') || 'none'}`;
        return { route, caller, method, url, headers: all, body: sent.body, label };
      });
  });
}

// ---------------------------------------------------------------- what a refused request must not change

/**
 * Tables a refused request may write (bookkeeping), and columns that move on
 * any visit. Everything else is a domain row: a refused request leaves it as it was.
 */
const BOOKKEEPING_TABLES = new Set([
  'login_throttle',
  'public_chat_rate_limits',
  'public_chat_counters',
  'public_chat_client_ips',
  'public_chat_limited_identifiers',
  'status_counters',
  'rate_budgets',
  'cluster_event_payloads',
  // The log of calls made to the assistant's provider (a refused upload may have been tried there first).
  'openai_create_thread_logs',
  'openai_create_message_logs',
  'openai_create_run_logs',
  'openai_retrieve_run_logs',
  'openai_list_messages_logs',
  'openai_vector_store_logs',
  'kysely_migration',
  'kysely_migration_lock',
]);
/** Rows a first contact creates (a visitor's chat session): new ones are allowed, existing ones must not change. */
const FIRST_CONTACT_TABLES = new Set(['public_chat_sessions']);
const SLIDING_COLUMNS = new Set(['last_seen_at', 'expires_at', 'updated_at']);

export type Snapshot = Map<string, Map<string, string>>;

/** A domain table and its binary columns (digested rather than compared). */
export interface SnapshotTable {
  name: string;
  binary: string[];
}

/** The domain tables of the database (bookkeeping left out). */
export async function snapshotTables(database: Database): Promise<SnapshotTable[]> {
  const rows =
    database.dialect === 'sqlite'
      ? (await sql<{ name: string; binary: string | null }>`select name, null as binary from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(database.db)).rows
      : (
          await sql<{ name: string; binary: string | null }>`select t.table_name as name,
            (select string_agg(c.column_name, ',') from information_schema.columns c
              where c.table_schema = t.table_schema and c.table_name = t.table_name and c.data_type = 'bytea') as binary
            from information_schema.tables t where t.table_schema = current_schema() and t.table_type = 'BASE TABLE'`.execute(database.db)
        ).rows;
  return rows
    .filter((row) => !BOOKKEEPING_TABLES.has(row.name))
    .map((row) => ({ name: row.name, binary: row.binary ? row.binary.split(',') : [] }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Every domain row, keyed by table and row identity (its id or key, else its
 * text columns), as a digest per column; sliding columns left out.
 */
export async function snapshot(database: Database, tables: SnapshotTable[]): Promise<Snapshot> {
  const result: Snapshot = new Map(tables.map((table) => [table.name, new Map<string, string>()]));
  if (database.dialect === 'postgres') {
    // One query, digested in the database: a knowledge index's blobs never cross the wire as text.
    const parts = tables.map(({ name, binary }) => {
      let text = sql`to_jsonb(t)`;
      for (const column of [...SLIDING_COLUMNS, ...binary]) text = sql`${text} - ${sql.lit(column)}::text`;
      let all = text;
      for (const column of binary) all = sql`${all} || jsonb_build_object(${sql.lit(column)}::text, md5(${sql.ref(`t.${column}`)}))`;
      return sql`select ${sql.lit(name)} as tbl, coalesce(to_jsonb(t) ->> 'id', to_jsonb(t) ->> 'key', (${text})::text) as key,
        (select string_agg(key || ':' || left(md5(value::text), 12), ' ' order by key) from jsonb_each(${all})) as digest
        from ${sql.table(name)} as t`;
    });
    const rows = (await sql<{ tbl: string; key: string; digest: string | null }>`${sql.join(parts, sql` union all `)}`.execute(database.db)).rows;
    for (const row of rows) result.get(row.tbl)!.set(row.key, row.digest ?? '');
    return result;
  }
  for (const { name } of tables) {
    const keyed = result.get(name)!;
    for (const row of (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(database.db)).rows) {
      const columns: string[] = [];
      const text: unknown[] = [];
      for (const [column, value] of Object.entries(row)) {
        if (SLIDING_COLUMNS.has(column)) continue;
        const digest = createHash('sha1');
        if (value instanceof Uint8Array) digest.update(value);
        else {
          digest.update(`${typeof value}:${String(value)}`);
          text.push(value);
        }
        columns.push(`${column}:${digest.digest('base64url').slice(0, 12)}`);
      }
      keyed.set('id' in row ? String(row.id) : 'key' in row ? String(row.key) : JSON.stringify(text), columns.join(' '));
    }
  }
  return result;
}

/** What changed between two snapshots that a refused request may not change; empty when nothing did. */
export function forbiddenChanges(before: Snapshot, after: Snapshot): string[] {
  const changes: string[] = [];
  for (const [table, rows] of after) {
    const old = before.get(table) ?? new Map<string, string>();
    for (const [key, row] of rows) {
      const was = old.get(key);
      if (was === undefined && !FIRST_CONTACT_TABLES.has(table)) changes.push(`${table} row ${key} added`);
      else if (was !== undefined && was !== row) {
        const old = new Set(was.split(' '));
        const columns = row.split(' ').filter((column) => !old.has(column)).map((column) => column.split(':')[0]);
        changes.push(`${table} row ${key} changed (${columns.join(', ')})`);
      }
    }
    for (const key of old.keys()) if (!rows.has(key)) changes.push(`${table} row ${key} removed`);
  }
  return changes;
}
