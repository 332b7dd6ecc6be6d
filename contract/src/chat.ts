import { z } from 'zod';

export {
  ANSWER_MAX_LENGTH,
  ANSWER_TRUNCATED_MARK,
  answerKeptLength,
  capAnswer,
  CHAT_MESSAGE_MAX,
  CHAT_STREAM_EVENTS,
  scheduleEventCalendarUrl,
  FEEDBACK_CHOICES,
  FEEDBACK_DESCRIPTION_MAX,
  FEEDBACK_DETAIL_MAX,
  FEEDBACK_OTHER_DESCRIPTION_MAX,
  FEEDBACK_TYPE_LABELS,
  FEEDBACK_TYPES,
  type FeedbackType,
} from './chat-constants.ts';
import { CHAT_MESSAGE_MAX, FEEDBACK_DESCRIPTION_MAX, FEEDBACK_DETAIL_MAX, FEEDBACK_OTHER_DESCRIPTION_MAX, FEEDBACK_TYPES } from './chat-constants.ts';

/**
 * What an answer cites (DESIGN §9 "Sources"): a schedule event by the feed's
 * own id, or a knowledge file by its title ("Convention schedule" for the
 * crawler's document, never its generated file name).
 */
export const SourceSchema = z.object({
  kind: z.enum(['event', 'file']),
  title: z.string(),
  event_uid: z.string().optional(),
  starts_at: z.string().optional(),
  ends_at: z.string().optional(),
  location: z.string().optional(),
  file_id: z.string().optional(),
  filename: z.string().optional(),
});
export type Source = z.infer<typeof SourceSchema>;

export const ScheduleEventFileParamsSchema = z.object({
  file: z
    .string()
    .max(600, 'file: the event id is too long')
    .regex(/\.ics$/, 'file: must be the event id followed by .ics'),
});

/** The browser's id for one question: a retry under the same id is answered once (DESIGN §9). */
const ClientMessageIdSchema = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_-]+$/, 'client_message_id may contain letters, digits, _ and - only');

export const ChatSendRequestSchema = z.object({
  message: z
    .string()
    .trim()
    .min(1, 'Message is empty')
    .max(CHAT_MESSAGE_MAX, `Message must be at most ${CHAT_MESSAGE_MAX} characters`),
  /** The verified token, or an empty string; the session's verification is what counts (DESIGN §7). */
  token: z.string().max(4096).optional(),
  /** The browser's id for this question, so a retry over flaky Wi-Fi is answered once. */
  client_message_id: ClientMessageIdSchema.optional(),
});
export type ChatSendRequest = z.infer<typeof ChatSendRequestSchema>;

/** What a stopped answer's reply says (`error`), its partial answer in `response`. */
export const ANSWER_STOPPED_MESSAGE = 'The answer was stopped.';

/**
 * SPEC §3 "Chat reply", plus the sources the answer cites. An answer the
 * visitor stopped (POST /public/chat/cancel) replies `success: false`,
 * `stopped: true`, its partial answer in `response`.
 */
export const ChatReplySchema = z.object({
  success: z.boolean(),
  response: z.string(),
  feedback_id: z.number().nullable(),
  error: z.string().nullable(),
  sources: z.array(SourceSchema).optional(),
  stopped: z.boolean().optional(),
  /** The stable code of a failure (the JSON error body's `code`), in a streamed `done`. */
  code: z.string().optional(),
});
export type ChatReply = z.infer<typeof ChatReplySchema>;

/** The streamed answer's events (DESIGN §9): see CHAT_STREAM_EVENTS in chat-constants.ts. */
export const ChatDeltaSchema = z.object({ text: z.string() });
export type ChatDelta = z.infer<typeof ChatDeltaSchema>;

/** POST /public/chat/cancel: stops the session's answer to this question (DESIGN §9). */
export const ChatCancelRequestSchema = z.object({ client_message_id: ClientMessageIdSchema });
export type ChatCancelRequest = z.infer<typeof ChatCancelRequestSchema>;

/**
 * The question after the cancel: `state` `aborted` when it was stopped (its
 * partial answer in `response`), or how it had already ended
 * (`completed`, `failed`, `aborted`).
 */
export const ChatCancelReplySchema = z.object({
  success: z.literal(true),
  error: z.null(),
  feedback_id: z.number(),
  state: z.string(),
  response: z.string().nullable(),
});
export type ChatCancelReply = z.infer<typeof ChatCancelReplySchema>;

/** POST /public/chat/new_conversation: the next question starts a new thread; history shows only the new conversation. */
export const ChatNewConversationReplySchema = z.object({ success: z.literal(true), error: z.null() });

export const FeedbackRequestSchema = z
  .object({
    feedback_id: z.coerce.number().int().positive('feedback_id must be a message id'),
    type: z.enum(FEEDBACK_TYPES, 'type must be one of good, outdated, hallucinated, other'),
    description: z.string().optional(),
    detail: z.string().max(FEEDBACK_DETAIL_MAX, `detail must be at most ${FEEDBACK_DETAIL_MAX} characters`).optional(),
  })
  .transform((value) => ({ ...value, description: value.description?.trim() || undefined }))
  .superRefine((value, ctx) => {
    const max = value.type === 'other' ? FEEDBACK_OTHER_DESCRIPTION_MAX : FEEDBACK_DESCRIPTION_MAX;
    if (value.type === 'other' && !value.description) {
      ctx.addIssue({ code: 'custom', path: ['description'], message: "Please provide details for 'Other' feedback" });
    }
    if (value.description && value.description.length > max) {
      ctx.addIssue({ code: 'custom', path: ['description'], message: `description must be at most ${max} characters` });
    }
  });
export type FeedbackRequest = z.infer<typeof FeedbackRequestSchema>;

export const SuccessReplySchema = z.object({ success: z.boolean(), error: z.string().nullable().optional() });

export const TurnstileVerifyRequestSchema = z.object({ token: z.string().max(4096).default('') });

export const TurnstileEnabledReplySchema = z.object({
  enabled: z.boolean(),
  success: z.boolean(),
  error: z.string().optional(),
});

export const LastRefreshReplySchema = z.union([
  z.object({ success: z.literal(true), data: z.string() }),
  z.object({ success: z.literal(false), error: z.string() }),
]);

/** One question and its answer, for restoring the conversation after a reload. */
export const ChatExchangeSchema = z.object({
  feedback_id: z.number(),
  question: z.string(),
  answer: z.string().nullable(),
  error: z.string().nullable(),
  state: z.string(),
  sources: z.array(SourceSchema),
  feedback_submitted: z.boolean(),
  created_at: z.string(),
});
export type ChatExchange = z.infer<typeof ChatExchangeSchema>;

/** The most exchanges one history reply holds, and what a request without `limit` gets. */
export const CHAT_HISTORY_MAX = 100;

/**
 * GET /public/chat/history paging, newest first: `limit` exchanges of the
 * current conversation, those older than `before` (an exchange's
 * `feedback_id`) when it is given. The reply lists them oldest first, as
 * without paging.
 */
export const ChatHistoryQuerySchema = z.object({
  before: z.coerce
    .number('must be a message id')
    .int('must be a message id (a whole number)')
    .positive('must be a message id (a whole number above 0)')
    .optional(),
  limit: z.coerce
    .number('must be a number')
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(CHAT_HISTORY_MAX, `must be at most ${CHAT_HISTORY_MAX}`)
    .default(CHAT_HISTORY_MAX),
});
export type ChatHistoryQuery = z.infer<typeof ChatHistoryQuerySchema>;

/**
 * `has_more`: the conversation has exchanges older than the first one
 * listed (ask again with `before` set to its `feedback_id`);
 * `earlier_count` says how many.
 */
export const ChatHistoryReplySchema = z.object({
  success: z.literal(true),
  exchanges: z.array(ChatExchangeSchema),
  has_more: z.boolean(),
  earlier_count: z.number(),
});
export type ChatHistoryReply = z.infer<typeof ChatHistoryReplySchema>;
