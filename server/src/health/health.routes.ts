import { HealthSchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ConfigService } from '../config/config.service.ts';
import { serviceUnavailable } from '../errors.ts';
import { SharedCheck } from './shared-check.ts';

/** Live figures other subsystems contribute to the health record. */
export interface HealthSources {
  /** Ask commands waiting for the assistant, counted on the database's health connection. */
  queueSize(): Promise<number>;
  discordGatewayConnected(): boolean;
}

export function registerHealthRoutes(
  instance: FastifyInstance,
  deps: { config: ConfigService; health: HealthSources },
): void {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  // The queue's count is the database check: one round trip, not a ping and then the count. Checks asked close
  // together share one (shared-check.ts says why and for how long).
  const queueCount = new SharedCheck(() => deps.health.queueSize());
  app.get('/healthz', { schema: { tags: ['health'], response: { 200: HealthSchema } } }, async (request) => {
    let queueSize: number;
    try {
      queueSize = await queueCount.get();
    } catch (error) {
      request.log.error({ err: error }, 'health check: database unreachable');
      throw serviceUnavailable('Database unreachable', 'database_unreachable');
    }
    return {
      paused: deps.config.get().paused,
      queue_size: queueSize,
      discord_gateway_connected: deps.health.discordGatewayConnected(),
    };
  });
}
