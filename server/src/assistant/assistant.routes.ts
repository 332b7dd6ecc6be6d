import path from 'node:path';
import { KnowledgeDocumentParamsSchema, KnowledgeReplySchema } from '@concierge/contract';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import type { AssistantService } from './assistant.service.ts';
import type { KnowledgeService } from './knowledge.service.ts';
import { releaseWritesAtMultipartEnd } from './multipart-finish.ts';
import { ProviderError } from './provider.ts';
import { receiveUpload, UploadGate, type ReceivedUpload } from './upload.ts';

/** Vector store endpoints of the control panel (SPEC §7). */
export async function registerAssistantRoutes(app: FastifyInstance, assistant: AssistantService, knowledge: KnowledgeService): Promise<void> {
  // The upload route reads its parts itself (receiveUpload), with its own limits.
  if (!releaseWritesAtMultipartEnd()) app.log.warn('the multipart parser has changed: uploads whose last part overflows its buffer may never be answered');
  await app.register(fastifyMultipart);
  const uploads = new UploadGate();
  const tags = ['assistant'];

  app.get('/api/openai/vector_stores', { schema: { tags } }, async () => {
    const context = { clientIp: null };
    const vectorStores = await providerCall(() => assistant.listVectorStores(context));
    const files = await providerCall(() => assistant.listFiles(context));
    return { provider: assistant.provider.kind, vector_stores: vectorStores, files };
  });

  app.post('/api/openai/vector_store/upload', { schema: { tags }, config: { ownBody: true } }, async (request) => {
    const leave = uploads.enter();
    let upload: ReceivedUpload | undefined;
    try {
      upload = await receiveUpload(request, assistant.provider.acceptedFileTypes);
      const { filename } = upload;
      const data = await upload.read();
      const stored = await providerCall(() => knowledge.add({ kind: 'upload', filename, data }, { clientIp: request.ip }));
      request.log.info({ filename, bytes: data.length, fileId: stored.id }, 'file added to the vector store');
      return {
        success: true,
        file_id: stored.id,
        filename: stored.filename,
        bytes: stored.bytes,
        vector_store_id: stored.vector_store_id,
        replaced: stored.replaced,
        message: `${stored.filename} (${stored.bytes} bytes) is in vector store ${stored.vector_store_id} as ${stored.id}${
          stored.replaced.length ? `, replacing ${stored.replaced.join(', ')}` : ''
        }`,
      };
    } finally {
      await upload?.dispose();
      leave();
    }
  });
}

/** The control panel's Knowledge section: the documents the assistant knows, to list, download and delete. */
export function registerKnowledgeRoutes(instance: FastifyInstance, knowledge: KnowledgeService): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['assistant'];
  app.get('/api/knowledge', { schema: { tags, response: { 200: KnowledgeReplySchema } } }, async () => ({
    provider: knowledge.providerKind,
    documents: await knowledge.list(),
  }));
  app.get('/api/knowledge/:id/download', { schema: { tags, params: KnowledgeDocumentParamsSchema } }, async (request, reply) => {
    const document = await knowledge.download(request.params.id);
    return reply
      .type(contentTypeOf(document.filename))
      .header('content-disposition', `attachment; filename="${document.filename.replace(/["\\\r\n]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(document.filename)}`)
      .header('cache-control', 'no-store')
      .send(document.content);
  });
  app.delete('/api/knowledge/:id', { schema: { tags, params: KnowledgeDocumentParamsSchema } }, async (request) => {
    const document = await providerCall(() => knowledge.delete(request.params.id, { clientIp: request.ip }));
    request.log.info({ filename: document.filename, documentId: document.id }, 'knowledge document deleted');
    return { success: true, id: document.id, message: `${document.title} (${document.filename}) deleted` };
  });
}

const CONTENT_TYPES: Record<string, string> = {
  '.md': 'text/markdown; charset=utf-8',
  '.markdown': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.pdf': 'application/pdf',
};
const contentTypeOf = (filename: string) => CONTENT_TYPES[path.extname(filename).toLowerCase()] ?? 'application/octet-stream';

/** Provider failures as clear replies: the provider's 4xx stays a 4xx, anything else is a 502. */
async function providerCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ProviderError) {
      const status = error.status && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 429 ? 400 : 502;
      throw new AppError(status, status === 400 ? 'provider_rejected' : 'provider_error', error.message, { cause: error });
    }
    throw error;
  }
}
