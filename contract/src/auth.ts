import { z } from 'zod';

export const USERNAME_MAX = 64;
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

const username = z
  .string()
  .trim()
  .min(1, 'Username is required')
  .max(USERNAME_MAX, `Username must be at most ${USERNAME_MAX} characters`)
  .regex(/^[\p{L}\p{N}_.@-]+$/u, 'Username may contain letters, digits and _ . @ - only');

export const SetupStatusSchema = z.object({ required: z.boolean() });
export type SetupStatus = z.infer<typeof SetupStatusSchema>;

export const SetupRequestSchema = z.strictObject({
  username,
  password: z
    .string()
    .min(PASSWORD_MIN, `Password must be at least ${PASSWORD_MIN} characters`)
    .max(PASSWORD_MAX, `Password must be at most ${PASSWORD_MAX} characters`),
  confirm_password: z.string().max(PASSWORD_MAX, `Password must be at most ${PASSWORD_MAX} characters`),
});
export type SetupRequest = z.infer<typeof SetupRequestSchema>;

export const LoginRequestSchema = z.strictObject({
  username: z.string().trim().min(1, 'Username is required').max(USERNAME_MAX),
  password: z.string().min(1, 'Password is required').max(PASSWORD_MAX),
});
export type LoginRequest = z.infer<typeof LoginRequestSchema>;

/** `POST /setup`, `POST /login` and `GET /api/logged_in` all answer with the admin's name. */
export const UsernameReplySchema = z.object({ username: z.string() });
export type UsernameReply = z.infer<typeof UsernameReplySchema>;

export const OkReplySchema = z.object({ success: z.literal(true) });
