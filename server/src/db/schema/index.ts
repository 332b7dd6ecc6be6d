import type { AskCommandFeedbackTable, AskCommandFeedbackUndoTable, AskCommandTable, DiscordGatewayTable, DiscordMessageTable, TokenSpendTable, UserTable } from './ask.ts';
import type { AdminSessionTable, AdminUserTable, AppSettingTable, LoginThrottleTable, WatchTokenTable } from './admin.ts';
import type {
  ContentPartTable,
  KnowledgeDocumentTable,
  LocalFileTable,
  LocalMessageTable,
  LocalRunTable,
  LocalThreadTable,
  LocalVectorStoreTable,
  ProviderLogTable,
} from './assistant.ts';
import type {
  PublicChatClientIpTable,
  PublicChatCounterTable,
  PublicChatLimitedIdentifierTable,
  PublicChatFeedbackTable,
  PublicChatMessageTable,
  PublicChatRateLimitTable,
  PublicChatSessionTable,
  SpentVerificationTokenTable,
} from './chat.ts';
import type { RuntimeConfigTable } from './config.ts';
import type { ClusterEventPayloadTable, RateBudgetTable, StatusCounterTable } from './cluster.ts';
import type { CrawlerEventTable, CrawlerHealthTable, CrawlerRunTable } from './crawler.ts';

/** Every table of the database, by name. Later domains add theirs here. */
export interface DB {
  admin_users: AdminUserTable;
  admin_sessions: AdminSessionTable;
  login_throttle: LoginThrottleTable;
  app_settings: AppSettingTable;
  watch_tokens: WatchTokenTable;
  runtime_config: RuntimeConfigTable;

  public_chat_sessions: PublicChatSessionTable;
  public_chat_messages: PublicChatMessageTable;
  public_chat_feedback: PublicChatFeedbackTable;
  public_chat_rate_limits: PublicChatRateLimitTable;
  spent_verification_tokens: SpentVerificationTokenTable;
  public_chat_counters: PublicChatCounterTable;
  public_chat_client_ips: PublicChatClientIpTable;
  public_chat_limited_identifiers: PublicChatLimitedIdentifierTable;

  openai_create_thread_logs: ProviderLogTable;
  openai_create_message_logs: ProviderLogTable;
  openai_create_run_logs: ProviderLogTable;
  openai_retrieve_run_logs: ProviderLogTable;
  openai_list_messages_logs: ProviderLogTable;
  openai_vector_store_logs: ProviderLogTable;

  local_threads: LocalThreadTable;
  local_messages: LocalMessageTable;
  local_runs: LocalRunTable;
  local_vector_stores: LocalVectorStoreTable;
  local_files: LocalFileTable;
  knowledge_documents: KnowledgeDocumentTable;
  content_parts: ContentPartTable;

  users: UserTable;
  ask_commands: AskCommandTable;
  ask_command_feedback: AskCommandFeedbackTable;
  discord_messages: DiscordMessageTable;
  token_spend: TokenSpendTable;
  discord_gateway: DiscordGatewayTable;
  ask_command_feedback_undos: AskCommandFeedbackUndoTable;

  crawler_runs: CrawlerRunTable;
  crawler_events: CrawlerEventTable;
  crawler_health: CrawlerHealthTable;

  status_counters: StatusCounterTable;
  rate_budgets: RateBudgetTable;
  cluster_event_payloads: ClusterEventPayloadTable;
}

export type { AdminSessionTable, AdminUserTable, AppSettingTable, LoginThrottleTable, RuntimeConfigTable };
