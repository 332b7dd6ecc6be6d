/**
 * The public chat's limits and feedback wording, without zod, so the chat
 * page can use them without loading the schema library.
 */

export const CHAT_MESSAGE_MAX = 2500;
export const FEEDBACK_DESCRIPTION_MAX = 500;
export const FEEDBACK_OTHER_DESCRIPTION_MAX = 2000;
export const FEEDBACK_DETAIL_MAX = 4000;

export const FEEDBACK_TYPES = ['good', 'outdated', 'hallucinated', 'other'] as const;
export type FeedbackType = (typeof FEEDBACK_TYPES)[number];

/** Labels for admin chips and counts (SPEC §4). */
export const FEEDBACK_TYPE_LABELS: Record<FeedbackType, string> = {
  good: 'Good Response',
  outdated: 'Outdated Information',
  hallucinated: 'Incorrect Information',
  other: 'Other',
};

/** The Provide Feedback dialog's choices (SPEC §5). */
export const FEEDBACK_CHOICES: { type: FeedbackType; label: string; description: string }[] = [
  { type: 'good', label: 'Good response', description: 'This response was helpful and accurate.' },
  { type: 'outdated', label: 'Outdated information', description: 'This response contains outdated information.' },
  { type: 'hallucinated', label: 'Incorrect information', description: 'This response contains factual errors.' },
  { type: 'other', label: 'Other', description: 'Something else (please specify below).' },
];

/**
 * The streamed answer (DESIGN §9), `Accept: text/event-stream` on
 * POST /public/chat/send and /api/chat/send: `event: delta` with
 * `data: {"text": "<chunk>"}` zero or more times (the answer is the chunks
 * put together, in order), then exactly one `event: done` whose data is the
 * ChatReply; comment lines (`: keep-alive`) in between at least every 15 s.
 */
export const CHAT_STREAM_EVENTS = { delta: 'delta', done: 'done' } as const;

/** GET /public/schedule/events/{uid}.ics: an event source's "Add to calendar" (the UID URL-encoded). */
export const scheduleEventCalendarUrl = (uid: string) => `/public/schedule/events/${encodeURIComponent(uid)}.ics`;
