import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { Dialect } from '../database.ts';
import * as foundation from './20261122T090000-foundation.ts';
import * as assistantAndChat from './20261122T100000-assistant-and-chat.ts';
import * as crawler from './20261122T110000-crawler.ts';
import * as chatCounters from './20261122T120000-chat-counters.ts';
import * as listIndexes from './20261123T090000-list-indexes.ts';
import * as askPipeline from './20261123T100000-ask-pipeline.ts';
import * as knowledgeAndHeldRuns from './20261124T090000-knowledge-and-held-runs.ts';
import * as publicChatWording from './20261125T090000-public-chat-wording.ts';
import * as crawlerHealth from './20261125T100000-crawler-health.ts';
import * as retention from './20261125T110000-retention.ts';
import * as tokenBudget from './20261126T090000-token-budget.ts';
import * as discordBot from './20261127T140000-discord-bot.ts';
import * as chatConversations from './20261127T160000-chat-conversations.ts';
import * as cluster from './20261128T090000-cluster.ts';
import * as watchTokens from './20261129T100000-watch-tokens.ts';
import * as usersPage from './20261129T110000-users-page.ts';
import * as feedbackOncePerType from './20261129T120000-feedback-once-per-type.ts';
import * as loginDelays from './20261129T130000-login-delays.ts';
import * as pollBudget from './20261129T160000-poll-budget.ts';
import * as counterShards from './20261130T090000-counter-shards.ts';
import * as fewerIndexWrites from './20261130T100000-fewer-index-writes.ts';
import * as inlineCallLogs from './20261206T090000-inline-call-logs.ts';

interface DialectMigration {
  up(db: Kysely<unknown>, dialect: Dialect): Promise<void>;
  down?(db: Kysely<unknown>, dialect: Dialect): Promise<void>;
}

/**
 * Every migration, in order. Names are timestamps so they sort; a new
 * migration is a new file listed here, never an edit of an applied one.
 */
const REGISTRY: Record<string, DialectMigration> = {
  '20261122T090000-foundation': foundation,
  '20261122T100000-assistant-and-chat': assistantAndChat,
  '20261122T110000-crawler': crawler,
  '20261122T120000-chat-counters': chatCounters,
  '20261123T090000-list-indexes': listIndexes,
  '20261123T100000-ask-pipeline': askPipeline,
  '20261124T090000-knowledge-and-held-runs': knowledgeAndHeldRuns,
  '20261125T090000-public-chat-wording': publicChatWording,
  '20261125T100000-crawler-health': crawlerHealth,
  '20261125T110000-retention': retention,
  '20261126T090000-token-budget': tokenBudget,
  '20261127T140000-discord-bot': discordBot,
  '20261127T160000-chat-conversations': chatConversations,
  '20261128T090000-cluster': cluster,
  '20261129T100000-watch-tokens': watchTokens,
  '20261129T110000-users-page': usersPage,
  '20261129T120000-feedback-once-per-type': feedbackOncePerType,
  '20261129T130000-login-delays': loginDelays,
  '20261129T160000-poll-budget': pollBudget,
  '20261130T090000-counter-shards': counterShards,
  '20261130T100000-fewer-index-writes': fewerIndexWrites,
  '20261206T090000-inline-call-logs': inlineCallLogs,
};

/** The registry bound to one dialect, in the shape Kysely's Migrator wants. */
export function migrationsFor(dialect: Dialect): Record<string, Migration> {
  return Object.fromEntries(
    Object.entries(REGISTRY).map(([name, migration]) => [
      name,
      {
        up: (db: Kysely<unknown>) => migration.up(db, dialect),
        down: migration.down ? (db: Kysely<unknown>) => migration.down!(db, dialect) : undefined,
      },
    ]),
  );
}
