/** The console's grouped navigation (SPEC §2 "Top bar and navigation"). */
export interface NavItem {
  label: string;
  path: string;
}
export interface NavGroup {
  label: string;
  items: NavItem[];
}

export const NAV_GROUPS: NavGroup[] = [
  {
    label: 'App',
    items: [
      { label: 'Status', path: '/admin/status' },
      { label: 'Commands', path: '/admin/commands' },
      { label: 'Config', path: '/admin/config' },
    ],
  },
  {
    label: 'Public Chat',
    items: [
      { label: 'Messages', path: '/admin/public_chat_messages' },
      { label: 'Sessions', path: '/admin/public_chat_sessions' },
      { label: 'Rate Limits', path: '/admin/public_chat_rate_limits' },
      { label: 'OpenAI Create Thread', path: '/admin/public_chat_openai_create_thread' },
      { label: 'OpenAI Create Message', path: '/admin/public_chat_openai_create_message' },
      { label: 'OpenAI Create Run', path: '/admin/public_chat_openai_create_run' },
      { label: 'OpenAI Retrieve Run', path: '/admin/public_chat_openai_retrieve_run' },
      { label: 'OpenAI List Messages', path: '/admin/public_chat_openai_list_messages' },
    ],
  },
  {
    label: 'Discord',
    items: [
      { label: 'Messages', path: '/admin/discord_messages' },
      { label: 'AskCommands', path: '/admin/ask_commands' },
    ],
  },
  {
    label: 'System',
    items: [
      { label: 'Users', path: '/admin/users' },
      { label: 'Watch', path: '/admin/watch' },
      { label: 'Crawler Runs', path: '/admin/crawler_runs' },
      { label: 'Crawler Events', path: '/admin/crawler_events' },
    ],
  },
];

/** The public chat: its own page, so the console links to it with a full page load. */
export const CHAT_URL = '/ui/chat';
