import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { PROVIDER_LOG_TABLE, type ProviderStep } from '../db/schema/assistant.ts';
import { containsText, isPresent, isTrue, paged, type ListPage as Page } from './list-query.ts';

export const listMessages = (db: Db, filters: Page & { session_id?: string; role?: 'user' | 'assistant'; state?: string }) =>
  db
    .selectFrom('public_chat_messages as message')
    .select([
      'message.id',
      'message.session_id',
      'message.role',
      'message.content',
      'message.response',
      'message.state',
      'message.prompt_tokens',
      'message.completion_tokens',
      'message.total_tokens',
      'message.client_ip',
      'message.user_agent',
      'message.openai_message_id',
      'message.run_id',
      'message.run_status',
      'message.processing_duration_ms',
      'message.response_latency_ms',
      'message.created_at',
      'message.updated_at',
      'message.error',
    ])
    .$if(filters.session_id !== undefined, (qb) => qb.where(containsText('message.session_id', filters.session_id!)))
    .$if(filters.role !== undefined, (qb) => qb.where('message.role', '=', filters.role!))
    .$if(filters.state !== undefined, (qb) => qb.where('message.state', '=', filters.state!))
    .$call(paged(filters, 'message.created_at', 'message.id'))
    .execute();

export const listFeedback = (db: Db, filters: Page & { session_id?: string; message_id?: number; message_ids?: number[]; type?: string }) =>
  db
    .selectFrom('public_chat_feedback')
    .select(['id', 'public_chat_message_id', 'session_id', 'type', 'description', 'detail', 'client_ip', 'user_agent', 'created_at'])
    .$if(filters.session_id !== undefined, (qb) => qb.where(containsText('session_id', filters.session_id!)))
    .$if(filters.message_id !== undefined, (qb) => qb.where('public_chat_message_id', '=', filters.message_id!))
    .$if(filters.message_ids !== undefined, (qb) => qb.where('public_chat_message_id', 'in', filters.message_ids!.length ? filters.message_ids! : [-1]))
    .$if(filters.type !== undefined, (qb) => qb.where('type', '=', filters.type!))
    .$call(paged(filters, 'created_at'))
    .execute();

export const listSessions = (
  db: Db,
  now: string,
  filters: Page & { session_id?: string; client_ip?: string; thread_id?: string; active?: boolean; has_error?: boolean },
) =>
  db
    .selectFrom('public_chat_sessions')
    .select([
      'id',
      'session_id',
      'client_ip',
      'user_agent',
      'referer',
      'thread_id',
      'message_count',
      'total_tokens',
      'verified',
      'first_seen_at',
      'last_seen_at',
      'expires_at',
      'created_at',
      'updated_at',
      'error',
    ])
    // Active: not yet expired (the stored flag would go stale).
    .select(sql<boolean>`expires_at > ${now}`.as('active'))
    .$if(filters.session_id !== undefined, (qb) => qb.where(containsText('session_id', filters.session_id!)))
    .$if(filters.client_ip !== undefined, (qb) => qb.where(containsText('client_ip', filters.client_ip!)))
    .$if(filters.thread_id !== undefined, (qb) => qb.where(containsText('thread_id', filters.thread_id!)))
    .$if(filters.active !== undefined, (qb) => qb.where('expires_at', filters.active ? '>' : '<=', now))
    .$if(filters.has_error !== undefined, (qb) => qb.where(isPresent('error', filters.has_error!)))
    .$call(paged(filters, 'created_at'))
    .execute();

export const listRateLimits = (db: Db, filters: Page & { identifier?: string; client_ip?: string; limited?: boolean }) =>
  db
    .selectFrom('public_chat_rate_limits')
    .selectAll()
    .$if(filters.identifier !== undefined, (qb) => qb.where(containsText('identifier', filters.identifier!)))
    .$if(filters.client_ip !== undefined, (qb) => qb.where(containsText('client_ip', filters.client_ip!)))
    .$if(filters.limited !== undefined, (qb) => qb.where(isTrue('limited', filters.limited!)))
    .$call(paged(filters, 'created_at'))
    .execute();

export const listProviderLogs = (
  db: Db,
  step: Exclude<ProviderStep, 'vector_store'>,
  filters: Page & { session_id?: string; message_id?: number; ask_command_id?: number; origin: 'public_chat' | 'ask_command' | 'all'; client_ip?: string; has_error?: boolean },
) =>
  db
    .selectFrom(PROVIDER_LOG_TABLE[step])
    .select([
      'id',
      'session_id',
      'public_chat_message_id',
      'ask_command_id',
      'client_ip',
      'user_agent',
      'request_started',
      'request_ended',
      'request_body',
      'response_body',
      'response_headers',
      'error',
      'created_at',
      'updated_at',
    ])
    .$if(filters.session_id !== undefined, (qb) => qb.where(containsText('session_id', filters.session_id!)))
    .$if(filters.message_id !== undefined, (qb) => qb.where('public_chat_message_id', '=', filters.message_id!))
    .$if(filters.ask_command_id !== undefined, (qb) => qb.where('ask_command_id', '=', filters.ask_command_id!))
    .$if(filters.origin !== 'all', (qb) => qb.where(isPresent('ask_command_id', filters.origin === 'ask_command')))
    .$if(filters.client_ip !== undefined, (qb) => qb.where(containsText('client_ip', filters.client_ip!)))
    .$if(filters.has_error !== undefined, (qb) => qb.where(isPresent('error', filters.has_error!)))
    .$call(paged(filters, 'created_at'))
    .execute();
