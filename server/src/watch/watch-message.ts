import { PUBLIC_CHAT_CONTEXT, type WatchMessage } from '@concierge/contract';
import type { AnswerEvent } from '../events.ts';

/** How many characters of a public chat session id name its visitor (DESIGN §9). */
const VISITOR_ID_LENGTH = 8;

/**
 * One answer as a Watch message (SPEC §3). A public chat answer (an
 * operator's test question too: its rows are public chat rows) names its
 * visitor by the first 8 characters of the session id (DESIGN §9); missing
 * values are empty strings and 0, as SPEC's defaults say.
 */
export function toWatchMessage(event: AnswerEvent): WatchMessage {
  const text = (value: string | null | undefined) => value ?? '';
  const common = {
    prompt: event.prompt,
    response: text(event.response),
    error: text(event.error),
    created_at: event.created_at,
    run_id: text(event.run_id),
    thread_id: text(event.thread_id),
    run_status: text(event.run_status),
    state: event.state,
    step: text(event.step),
    private: event.private,
  };
  if (event.source === 'public_chat' || event.source === 'admin_chat') {
    const visitor = text(event.session_id).slice(0, VISITOR_ID_LENGTH);
    return {
      ...common,
      user_id: `public:${visitor}`,
      username: 'public chat',
      global_name: `Visitor ${visitor}`,
      ask_command_id: 0,
      interaction_id: '',
      context: PUBLIC_CHAT_CONTEXT,
    };
  }
  return {
    ...common,
    user_id: text(event.user_id),
    username: text(event.username),
    global_name: text(event.global_name),
    ask_command_id: event.ask_command_id ?? 0,
    interaction_id: text(event.interaction_id),
    context: text(event.context),
  };
}
