import type { ConfigFields } from '@concierge/contract';

/**
 * The default system prompt: who the concierge is and how it must answer
 * (DESIGN §8, §9). It names the product and makes no claim about who runs
 * it, so the same default serves a fan-made guide and a convention's
 * official concierge; the About text (public_chat_about_text) says which.
 */
export function defaultInstructions(productName: string): string {
  return [
    `You are ${productName}, a concierge for attendees of this convention.`,
    'If someone asks who runs you or whether you are official, point them to the About box of this chat (the info button next to its title) and do not claim anything it may not say.',
    '',
    'Answer only from the convention schedule and the files you can search. For every event you mention give the day, the start time (in the convention\'s local time) and the room.',
    'If the schedule does not say, say so plainly and suggest asking at the information desk. Never invent guests, events, times, rooms or prices.',
    'Mention when an event is cancelled or has moved.',
    'Keep answers short and easy to scan on a phone: a sentence or two, then a short list when there are several events.',
  ].join('\n');
}

/** The public chat's wording as shipped (DESIGN §9); `{product}` stands for PRODUCT_NAME. */
export const DEFAULT_WORDING = {
  public_chat_welcome_message: "Hi! I'm {product}, your guide to the convention. Ask me about panels, guests, rooms and times — for example:",
  public_chat_example_prompts: ["What's on in Hall B tonight?", 'When is the costume contest?', 'Where are the autograph sessions?', "What's happening right now?"].join('\n'),
  public_chat_about_text: [
    '{product} is an independent, fan-made tool. It is not endorsed by or affiliated with the convention or its organizers.',
    '',
    'Answers come from the published schedule and can be wrong or out of date — check with convention staff when it matters.',
  ].join('\n'),
  // SPEC §8's text for an unavailable chat.
  public_chat_paused_message: 'The chat service is currently unavailable. Please try again later.',
} as const;

/** How long personal data and bulky records are kept (enforced by the hourly housekeeping). */
export const DEFAULT_RETENTION = {
  daily_token_budget: 0,
  token_budget_action: 'offline',
  retention_messages_days: 90,
  retention_client_ip_days: 30,
  retention_call_bodies_days: 30,
  retention_crawler_runs: 10,
} as const;

/** Values the runtime configuration row is seeded with on first start (DESIGN §8). */
export function defaultConfig(productName: string): ConfigFields {
  return {
    paused: false,
    recover_panic: true,
    discord_gateway_enabled: true,
    discord_custom_status: '/ask me about the con!',
    discord_error_message: 'Sorry, something went wrong!',
    discord_rate_limit_message: "I'm still working on your last question!",
    discord_notification_channel_id: '',
    discord_allowed_channel_ids: '',
    feedback_enabled: true,
    feedback_modal_title: 'Report a problem',
    feedback_modal_input_label: 'What was wrong?',
    feedback_modal_placeholder: 'Tell us what to fix',
    feedback_modal_min_length: 5,
    feedback_modal_max_length: 2000,
    feedback_max_undo: 1,
    ask_command_max_attempts: 3,
    ask_command_description: 'Ask the concierge about the convention',
    ask_command_option_description: 'Your question about panels, guests, rooms or times',
    ask_command_min_length: 1,
    ask_command_max_length: 500,
    whisper_command_description: 'Ask privately: only you see the answer',
    whisper_command_option_description: 'Your question (only you will see the answer)',
    ack_early: true,
    openai_truncation_strategy_type: 'auto',
    openai_truncation_strategy_last_messages: 3,
    openai_max_requests_per_second: 5,
    openai_max_polls_per_second: 20,
    openai_max_prompt_tokens: 0,
    openai_max_completion_tokens: 0,
    donated_role_id: '',
    assistant_poll_interval: '3s',
    assistant_max_poll_interval: '30s',
    assistant_instructions: defaultInstructions(productName),
    assistant_additional_instructions: '',
    crawler_schedule: '*/30 * * * *',
    user_ask_command_limit_6h: 10,
    donation_url: '',
    public_chat_enabled: true,
    public_chat_requests_per_minute: 10,
    public_chat_turnstile_validation_enabled: false,
    ...DEFAULT_WORDING,
    ...DEFAULT_RETENTION,
    log_level: 'INFO',
    openai_log_level: 'INFO',
    discord_log_level: 'INFO',
    discordgo_log_level: 'INFO',
    database_log_level: 'INFO',
    discord_webhook_log_level: 'INFO',
    api_log_level: 'INFO',
  };
}
