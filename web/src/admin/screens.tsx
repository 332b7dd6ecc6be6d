import { lazy, type ComponentType, type LazyExoticComponent } from 'react';

/** A console screen: its route under /admin, its title, and its lazily loaded page. */
export interface AdminScreen {
  path: string;
  title: string;
  page: LazyExoticComponent<ComponentType<{ title: string }>>;
}

const comingSoon = lazy(() => import('./placeholder/ComingSoonPage.tsx'));
const crawlerRuns = lazy(() => import('./crawler/CrawlerRunsPage.tsx'));
const status = lazy(() => import('./status/StatusPage.tsx'));
const commands = lazy(() => import('./commands/CommandsPage.tsx'));
const config = lazy(() => import('./config/ConfigPage.tsx'));
const messages = lazy(() => import('./public-chat/MessagesPage.tsx'));
const sessions = lazy(() => import('./public-chat/SessionsPage.tsx'));
const rateLimits = lazy(() => import('./public-chat/RateLimitsPage.tsx'));
const providerLogs = lazy(() => import('./public-chat/ProviderLogsPage.tsx'));
const crawlerEvents = lazy(() => import('./crawler/CrawlerEventsPage.tsx'));
const users = lazy(() => import('./users/UsersPage.tsx'));
const askCommands = lazy(() => import('./discord/AskCommandsPage.tsx'));
const discordMessages = lazy(() => import('./discord/DiscordMessagesPage.tsx'));

/** Every console route of SPEC §2 except login and setup. */
export const ADMIN_SCREENS: AdminScreen[] = [
  { path: 'status', title: 'System Status', page: status },
  { path: 'commands', title: 'Control Panel', page: commands },
  { path: 'config', title: 'Bot Config', page: config },
  { path: 'users', title: 'Users List', page: users },
  { path: 'watch', title: 'Watch', page: comingSoon },
  { path: 'ask_commands', title: 'Ask Commands', page: askCommands },
  { path: 'discord_messages', title: 'Discord Messages', page: discordMessages },
  { path: 'public_chat_messages', title: 'Public Chat Messages', page: messages },
  { path: 'public_chat_sessions', title: 'Public Chat Sessions', page: sessions },
  { path: 'public_chat_rate_limits', title: 'Public Chat Rate Limits', page: rateLimits },
  { path: 'public_chat_openai_create_thread', title: 'OpenAI Create Thread Logs', page: providerLogs },
  { path: 'public_chat_openai_create_message', title: 'OpenAI Create Message Logs', page: providerLogs },
  { path: 'public_chat_openai_create_run', title: 'OpenAI Create Run Logs', page: providerLogs },
  { path: 'public_chat_openai_retrieve_run', title: 'OpenAI Retrieve Run Logs', page: providerLogs },
  { path: 'public_chat_openai_list_messages', title: 'OpenAI List Messages Logs', page: providerLogs },
  { path: 'crawler_runs', title: 'Crawler Runs', page: crawlerRuns },
  { path: 'crawler_events', title: 'Crawler Events', page: crawlerEvents },
];
