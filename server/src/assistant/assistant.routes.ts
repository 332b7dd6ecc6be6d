import path from 'node:path';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { AppError, badRequest } from '../errors.ts';
import type { AssistantService } from './assistant.service.ts';
import { ProviderError } from './provider.ts';

/** Largest file an operator may upload to the vector store. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

/** Vector store endpoints of the control panel (SPEC §7). */
export async function registerAssistantRoutes(app: FastifyInstance, assistant: AssistantService): Promise<void> {
  await app.register(fastifyMultipart, { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 5, parts: 6 } });
  const tags = ['assistant'];

  app.get('/api/openai/vector_stores', { schema: { tags } }, async () => {
    const context = { clientIp: null };
    const vectorStores = await providerCall(() => assistant.listVectorStores(context));
    const files = await providerCall(() => assistant.listFiles(context));
    return { provider: assistant.provider.kind, vector_stores: vectorStores, files };
  });

  app.post('/api/openai/vector_store/upload', { schema: { tags } }, async (request) => {
    if (!request.isMultipart()) throw badRequest('Send the file as multipart/form-data in the field "file"', 'file_required');
    const part = await request.file();
    if (!part || part.fieldname !== 'file') throw badRequest('Send the file as multipart/form-data in the field "file"', 'file_required');
    const filename = path.basename(part.filename || '').trim();
    const extension = path.extname(filename).toLowerCase();
    const accepted = assistant.provider.acceptedFileTypes;
    if (!filename || !accepted.includes(extension)) {
      throw new AppError(415, 'unsupported_file_type', `File type must be one of ${accepted.join(', ')}`, { field: 'file' });
    }
    let data: Buffer;
    try {
      data = await part.toBuffer();
    } catch (error) {
      if (part.file.truncated || (error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') {
        throw new AppError(413, 'file_too_large', `File is too large (at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB)`, { field: 'file' });
      }
      throw error;
    }
    if (data.length === 0) throw new AppError(400, 'file_empty', 'File is empty', { field: 'file' });
    const stored = await providerCall(() => assistant.uploadFile({ filename, data }, { context: { clientIp: request.ip } }));
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
  });
}

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
