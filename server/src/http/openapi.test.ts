import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../test-support/test-context.ts';
import { operationIdOf } from './openapi.ts';

type Operation = { operationId?: string; security?: Record<string, string[]>[]; requestBody?: { content: Record<string, { schema: unknown }> }; responses: Record<string, { content?: Record<string, unknown> }> };
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, unknown> } };

describe('the OpenAPI description', () => {
  let ctx: TestContext;
  let document: Document;
  beforeAll(async () => {
    ctx = await createTestContext();
    // No session, no cookie: it is not a secret.
    const reply = await ctx.app.inject({ url: '/api/openapi.json' });
    expect(reply.statusCode).toBe(200);
    document = reply.json();
  });
  afterAll(() => ctx.close());

  const operations = () => Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));

  it('is a valid OpenAPI document', async () => {
    expect(document.openapi).toMatch(/^3\./);
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeTruthy();
  });

  it('lists every route the server answers, /metrics and /healthz included', () => {
    const documented = new Set(operations().map(({ path, method }) => `${method.toUpperCase()} ${path}`));
    const served = ctx.app
      .listRoutes()
      .filter((route) => route.method !== 'HEAD' && route.url !== '/' && route.url !== '/chat' && !route.url.startsWith('/ui'))
      .map((route) => `${route.method} ${route.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`);
    expect(served.length).toBeGreaterThan(30);
    for (const route of served) expect(documented, route).toContain(route);
    expect(documented).toContain('GET /metrics');
    expect(documented).toContain('GET /healthz');
  });

  it('gives every operation its own operationId', () => {
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operationIdOf('get', '/api/user/{id}/history')).toBe('getApiUserByIdHistory');
    expect(document.paths['/api/public_chat_messages']!.get!.operationId).toBe('getApiPublicChatMessages');
  });

  it('states how each operation is authorised: the session cookie, the metrics bearer token, the Watch token, or nothing', () => {
    expect(document.components.securitySchemes).toEqual({
      adminSession: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: 'concierge_admin' }),
      metricsToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      watchToken: expect.objectContaining({ type: 'apiKey', in: 'query', name: 'token' }),
    });
    for (const { path, method, operation } of operations()) {
      const where = `${method} ${path}`;
      if (path === '/metrics') expect(operation.security, where).toEqual([{ metricsToken: [] }, { adminSession: [] }]);
      else if (path === '/ws') expect(operation.security, where).toEqual([{ watchToken: [] }]);
      else if (path.startsWith('/api/') && path !== '/api/openapi.json') {
        expect(operation.security, where).toEqual([{ adminSession: [] }]);
        expect(operation.responses, where).toHaveProperty('401');
      } else expect(operation.security, where).toEqual([]);
    }
  });

  it('describes the upload as a multipart body with a binary file, and /metrics as text', () => {
    const upload = document.paths['/api/openai/vector_store/upload']!.post!;
    expect(upload.requestBody!.content['multipart/form-data']!.schema).toEqual({
      type: 'object',
      required: ['file'],
      properties: { file: { type: 'string', format: 'binary' } },
    });
    expect(Object.keys(document.paths['/metrics']!.get!.responses['200']!.content!)).toEqual(['text/plain; version=0.0.4']);
  });
});
