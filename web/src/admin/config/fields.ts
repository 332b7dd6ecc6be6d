import { EXAMPLE_PROMPT_MAX_LENGTH, EXAMPLE_PROMPTS_MAX, LOG_LEVELS, TOKEN_BUDGET_ACTIONS, TRUNCATION_TYPES, type ConfigField } from '@concierge/contract';

export type FieldKind = 'boolean' | 'integer' | 'decimal' | 'text' | 'multiline' | 'select';

export interface FieldSpec {
  name: ConfigField;
  label: string;
  kind: FieldKind;
  help: string;
  options?: readonly string[];
  min?: number;
  max?: number;
}

export interface SectionSpec {
  title: string;
  fields: FieldSpec[];
}

const logLevel = (name: ConfigField, label: string, help: string): FieldSpec => ({ name, label, kind: 'select', options: LOG_LEVELS, help });

/**
 * The Bot Config form (SPEC §2): every runtime setting except ack_early and
 * whisper_command_option_description, grouped as SPEC lists the sections,
 * each with a line saying what it does.
 */
export const SECTIONS: SectionSpec[] = [
  {
    title: 'General',
    fields: [
      { name: 'paused', label: 'Paused', kind: 'boolean', help: 'While paused, no question goes to the assistant; the public chat shows the paused message (Public Chat API section).' },
      { name: 'recover_panic', label: 'Recover from crashes', kind: 'boolean', help: 'Keep the bot running after an unexpected error in a command handler (the error is logged).' },
      { name: 'crawler_schedule', label: 'Crawler schedule', kind: 'text', help: 'Cron expression for refreshing the convention schedule, e.g. */30 * * * * for every 30 minutes.' },
      { name: 'donation_url', label: 'Donation URL', kind: 'text', help: 'Shown to Discord users who run out of questions. Empty turns it off.' },
      { name: 'retention_messages_days', label: 'Keep chat messages (days)', kind: 'integer', min: 0, max: 3650, help: 'Public chat messages, their feedback and idle sessions are deleted after this many days. 0 keeps them for ever.' },
      { name: 'retention_client_ip_days', label: 'Keep client addresses (days)', kind: 'integer', min: 0, max: 3650, help: 'IP addresses are removed from every record (and per-address limits) after this many days. 0 keeps them.' },
      { name: 'retention_call_bodies_days', label: 'Keep AI call bodies (days)', kind: 'integer', min: 0, max: 3650, help: 'The OpenAI call logs lose their request and response bodies after this many days; timings and errors stay. 0 keeps them.' },
      { name: 'retention_crawler_runs', label: 'Crawler runs with events', kind: 'integer', min: 0, max: 10_000, help: 'Events are kept for this many newest crawler runs (and always the last good one). 0 keeps all.' },
    ],
  },
  {
    title: 'Discord',
    fields: [
      { name: 'discord_gateway_enabled', label: 'Gateway enabled', kind: 'boolean', help: 'Connect the Discord bot. Has no effect until DISCORD_TOKEN is configured.' },
      { name: 'discord_custom_status', label: 'Custom status', kind: 'text', help: 'The status line the bot shows in Discord.' },
      { name: 'discord_error_message', label: 'Error message', kind: 'multiline', help: 'What the bot answers when it cannot answer a question.' },
      { name: 'discord_rate_limit_message', label: 'Rate limit message', kind: 'multiline', help: 'What the bot answers while a user still has a question in flight or is over the limit.' },
      { name: 'discord_notification_channel_id', label: 'Notification channel ID', kind: 'text', help: 'Channel where operators hear about the bot: connected, new users, users at their limit, failed commands, feedback, moved and cancelled events. Never the text of a /whisper. Empty turns notifications off.' },
      { name: 'discord_allowed_channel_ids', label: 'Allowed channel IDs', kind: 'multiline', help: 'Channels where /ask and /whisper are answered (and their threads), separated by commas or new lines. Elsewhere people get a polite private note naming these channels. Empty: every channel.' },
      { name: 'donated_role_id', label: 'Donor role ID', kind: 'text', help: 'Members with this role count as donors (higher limits). Empty turns it off.' },
    ],
  },
  {
    title: 'Discord Feedback',
    fields: [
      { name: 'feedback_enabled', label: 'Feedback buttons', kind: 'boolean', help: 'Show Good / Outdated / Incorrect / Other buttons under Discord answers.' },
      { name: 'feedback_modal_title', label: 'Modal title', kind: 'text', help: 'Title of the feedback form (at most 45 characters).' },
      { name: 'feedback_modal_input_label', label: 'Input label', kind: 'text', help: 'Label of the feedback text box (at most 45 characters).' },
      { name: 'feedback_modal_placeholder', label: 'Placeholder', kind: 'text', help: 'Hint shown in the empty feedback text box (at most 100 characters).' },
      { name: 'feedback_modal_min_length', label: 'Minimum length', kind: 'integer', min: 0, max: 4000, help: 'Fewest characters a feedback text may have.' },
      { name: 'feedback_modal_max_length', label: 'Maximum length', kind: 'integer', min: 1, max: 4000, help: 'Most characters a feedback text may have.' },
      { name: 'feedback_max_undo', label: 'Undo limit', kind: 'integer', min: 0, max: 10, help: 'How many times a user may take back feedback on one answer.' },
    ],
  },
  {
    title: 'OpenAI',
    fields: [
      { name: 'assistant_instructions', label: 'Assistant instructions', kind: 'multiline', help: 'The assistant\'s standing instructions. The offline assistant ignores them (it only quotes the schedule).' },
      { name: 'assistant_additional_instructions', label: 'Additional instructions', kind: 'multiline', help: 'Added after the instructions, e.g. this weekend\'s notices. Ignored by the offline assistant.' },
      { name: 'openai_truncation_strategy_type', label: 'Truncation type', kind: 'select', options: TRUNCATION_TYPES, help: 'auto: the whole conversation, trimmed by OpenAI when too long; last_messages: only the last N messages.' },
      { name: 'openai_truncation_strategy_last_messages', label: 'Truncation last messages', kind: 'integer', min: 1, max: 1000, help: 'N for last_messages truncation.' },
      { name: 'openai_max_prompt_tokens', label: 'Max prompt tokens', kind: 'integer', min: 0, max: 2_000_000, help: '0 = no limit; otherwise the oldest messages are dropped to fit (last_messages truncation).' },
      { name: 'openai_max_completion_tokens', label: 'Max completion tokens', kind: 'integer', min: 0, max: 1_000_000, help: '0 = no limit; otherwise the longest answer in tokens.' },
      { name: 'daily_token_budget', label: 'Daily token budget', kind: 'integer', min: 0, max: 1_000_000_000, help: 'OpenAI tokens the chat and the bot may spend per convention day (midnight to midnight in the convention\'s zone); 0 = no cap.' },
      { name: 'token_budget_action', label: 'When the budget is spent', kind: 'select', options: TOKEN_BUDGET_ACTIONS, help: 'offline: answer with the offline assistant until midnight; pause: answer nobody until midnight or until the budget is raised.' },
      { name: 'openai_max_requests_per_second', label: 'Max runs per second', kind: 'decimal', min: 0.1, max: 1000, help: 'Cap on new assistant runs per second, per server process.' },
      { name: 'openai_max_polls_per_second', label: 'Max status checks per second', kind: 'integer', min: 1, max: 1000, help: 'Budget for checking runs that are not streamed, shared by every run and every server process. Enough for runs in flight ÷ poll interval keeps every answer within the interval.' },
      { name: 'assistant_poll_interval', label: 'Poll interval', kind: 'text', help: 'How often a run that is not streamed is checked, e.g. 3s or 500ms: its answer arrives within this of being ready.' },
      { name: 'assistant_max_poll_interval', label: 'Max poll interval', kind: 'text', help: 'Kept for compatibility: checks no longer back off (the status-check budget bounds them), so this has no effect.' },
    ],
  },
  {
    title: 'Public Chat API',
    fields: [
      { name: 'public_chat_enabled', label: 'Public chat enabled', kind: 'boolean', help: 'Off: the chat page says the service is unavailable.' },
      { name: 'public_chat_requests_per_minute', label: 'Requests per minute', kind: 'integer', min: 1, max: 60, help: 'Questions per visitor session per minute (1–60); one address may ask 10× this.' },
      { name: 'public_chat_turnstile_validation_enabled', label: 'Human verification', kind: 'boolean', help: 'Require Cloudflare Turnstile before chatting. Needs TURNSTILE_SITE_KEY and TURNSTILE_SECRET_KEY.' },
      { name: 'public_chat_welcome_message', label: 'Welcome message', kind: 'multiline', help: 'The chat\'s first message, in Markdown. {product} becomes the product name.' },
      { name: 'public_chat_example_prompts', label: 'Example prompts', kind: 'multiline', help: `Offered under the welcome message, one per line (at most ${EXAMPLE_PROMPTS_MAX}, ${EXAMPLE_PROMPT_MAX_LENGTH} characters each). Empty: none.` },
      { name: 'public_chat_about_text', label: 'About text', kind: 'multiline', help: 'The info dialog\'s text, in Markdown: who runs this chat and what it is (official or fan-made), what is kept and for how long.' },
      { name: 'public_chat_paused_message', label: 'Paused message', kind: 'multiline', help: 'What visitors are told while the bot is paused, in Markdown.' },
    ],
  },
  {
    title: 'Ask Commands',
    fields: [
      { name: 'ask_command_description', label: '/ask description', kind: 'text', help: 'Description of /ask in Discord\'s command list.' },
      { name: 'ask_command_option_description', label: '/ask option description', kind: 'text', help: 'Description of the question option of /ask.' },
      { name: 'whisper_command_description', label: '/whisper description', kind: 'text', help: 'Description of /whisper (an answer only the asker sees).' },
      { name: 'ask_command_min_length', label: 'Minimum question length', kind: 'integer', min: 1, max: 6000, help: 'Shortest question /ask accepts.' },
      { name: 'ask_command_max_length', label: 'Maximum question length', kind: 'integer', min: 1, max: 6000, help: 'Longest question /ask accepts.' },
      { name: 'ask_command_max_attempts', label: 'Max attempts', kind: 'integer', min: 0, max: 100, help: 'Times a question is retried after a restart or failure (0 = unlimited).' },
      { name: 'user_ask_command_limit_6h', label: 'Questions per user per 6 h', kind: 'integer', min: 1, max: 10_000, help: 'The 24 h limit is four times this unless set per user.' },
    ],
  },
  {
    title: 'Logging',
    fields: [
      logLevel('log_level', 'Log level', 'General server log level.'),
      logLevel('api_log_level', 'API log level', 'HTTP requests and the console API.'),
      logLevel('openai_log_level', 'OpenAI log level', 'Assistant provider calls.'),
      logLevel('database_log_level', 'Database log level', 'Migrations and database events.'),
      logLevel('discord_log_level', 'Discord log level', 'The Discord bot.'),
      logLevel('discordgo_log_level', 'Discord gateway log level', 'The Discord gateway connection.'),
      logLevel('discord_webhook_log_level', 'Discord webhook log level', 'Feedback notifications to Discord.'),
    ],
  },
];
