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

/** The longest answer stored and served (characters): past it, an answer is cut and marked (ANSWER_TRUNCATED_MARK). */
export const ANSWER_MAX_LENGTH = 64 * 1024;
/** What ends an answer that was cut at ANSWER_MAX_LENGTH. */
export const ANSWER_TRUNCATED_MARK = '*[Answer truncated: it was longer than 64 KB.]*';
/** Where a too-long answer is cut: room left under the maximum for a closing code fence and the mark. */
const ANSWER_CUT = ANSWER_MAX_LENGTH - 64;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * How much of an answer (whole, or the part written so far) is certain to
 * be kept if it turns out too long: everything up to the cut, never half of
 * a surrogate pair. A stream hands on this much before it knows the end.
 */
export function answerKeptLength(text: string): number {
  if (text.length < ANSWER_CUT) return text.length;
  return isHighSurrogate(text.charCodeAt(ANSWER_CUT - 1)) ? ANSWER_CUT - 1 : ANSWER_CUT;
}

/**
 * The answer as stored and served: unchanged up to ANSWER_MAX_LENGTH
 * characters; longer, cut (a code block left open is closed) and ended with
 * ANSWER_TRUNCATED_MARK, ANSWER_MAX_LENGTH characters at most in all.
 */
export function capAnswer(text: string): string {
  if (text.length <= ANSWER_MAX_LENGTH) return text;
  const kept = text.slice(0, answerKeptLength(text));
  const openFence = (kept.match(/^ {0,3}```/gm)?.length ?? 0) % 2 === 1;
  return `${kept}${openFence ? '\n```' : ''}\n\n${ANSWER_TRUNCATED_MARK}`;
}
