import { z } from 'zod';

export const HealthSchema = z.object({
  paused: z.boolean(),
  queue_size: z.number().int(),
  discord_gateway_connected: z.boolean(),
});
export type Health = z.infer<typeof HealthSchema>;
