import { z } from 'zod';

/** Every error reply: a human message and a stable code (DESIGN §7). */
export const ErrorReplySchema = z.object({
  error: z.string(),
  code: z.string(),
  field: z.string().optional(),
  success: z.literal(false).optional(),
});
export type ErrorReply = z.infer<typeof ErrorReplySchema>;
