import { ConfigPatchSchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ConfigService } from './config.service.ts';

/** The runtime configuration: read it whole, change some fields. */
export function registerConfigRoutes(instance: FastifyInstance, config: ConfigService): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const tags = ['config'];

  app.get('/api/config', { schema: { tags } }, () => config.get());

  app.patch('/api/config', { schema: { tags, body: ConfigPatchSchema } }, (request) => config.update(request.body));
}
