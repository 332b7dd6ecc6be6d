import { HealthSchema } from '@concierge/contract';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ConfigService } from '../config/config.service.ts';
import { answeredWithin, PING_TIMEOUT_MS } from '../db/database.ts';
import { serviceUnavailable } from '../errors.ts';

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
  app.get('/healthz', { schema: { tags: ['health'], response: { 200: HealthSchema } } }, async (request) => {
    // The queue's count is the database check: one round trip, not a ping and then the count. Each one is a turn of
    // the event loop on PostgreSQL, and in a crowd every turn waits behind thousands of connections (bench/RESULTS.md).
    let queueSize: number;
    try {
      queueSize = await answeredWithin(deps.health.queueSize(), PING_TIMEOUT_MS);
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
