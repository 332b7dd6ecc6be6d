import { HealthSchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ConfigService } from '../config/config.service.ts';
import type { Database } from '../db/database.ts';
import { serviceUnavailable } from '../errors.ts';

/** Live figures other subsystems contribute to the health record. */
export interface HealthSources {
  /** Ask commands waiting for the assistant. */
  queueSize(): number | Promise<number>;
  discordGatewayConnected(): boolean;
}

export function registerHealthRoutes(
  instance: FastifyInstance,
  deps: { database: Database; config: ConfigService; health: HealthSources },
): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  app.get('/healthz', { schema: { tags: ['health'], response: { 200: HealthSchema } } }, async (request) => {
    try {
      await deps.database.ping();
    } catch (error) {
      request.log.error({ err: error }, 'health check: database unreachable');
      throw serviceUnavailable('Database unreachable', 'database_unreachable');
    }
    return {
      paused: deps.config.get().paused,
      queue_size: await deps.health.queueSize(),
      discord_gateway_connected: deps.health.discordGatewayConnected(),
    };
  });
}
