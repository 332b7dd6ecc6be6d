import { PostgresAdapter, sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';
import { StatementTemplate } from '../db/statement-template.ts';
import type { ChatRole } from '../db/schema/chat.ts';
import type { DB } from '../db/schema/index.ts';

/**
 * Counter rows per name on PostgreSQL. Every answer adds to the same dozen
 * counters; with one row each, concurrent answers queued on the row locks,
 * each waiting for the one before it to commit (bench/RESULTS.md). A
 * connection adds to the shard of its backend's process id, so the pool's
 * connections (consecutive ids) rarely share one. SQLite has one writer and
 * keeps shard 0.
 */
export const COUNTER_SHARDS = 64;
const COUNTER_SHARD = sql<number>`pg_backend_pid() % ${sql.lit(COUNTER_SHARDS)}`;

const onPostgres = (db: Db) => db.getExecutor().adapter instanceof PostgresAdapter;

const sessionById = (db: Db, sessionId: string) => db.selectFrom('public_chat_sessions').selectAll().where('session_id', '=', sessionId);

export type SessionRow = NonNullable<Awaited<ReturnType<ReturnType<typeof sessionById>['executeTakeFirst']>>>;

// The hot path's statements are built once (StatementTemplate); the builders stay beside them.
const findSessionStatement = new StatementTemplate((db, { sessionId }: { sessionId: string }) => sessionById(db, sessionId));

export const findSession = onQueryThread(
  'chat.findSession',
  async (database: Database, sessionId: string): Promise<SessionRow | undefined> => {
    const { rows } = await findSessionStatement.execute<SessionRow>(database.db, { sessionId });
    return rows[0];
  },
  {
    // The sessions of the requests that came in together, read in one statement.
    batch: {
      dialects: ['postgres', 'sqlite'],
      run: async (database, sessionIds) => {
        const ids = [...new Set(sessionIds)];
        const statement =
          database.dialect === 'postgres'
            ? sql<SessionRow>`select * from public_chat_sessions where session_id = any(cast(${ids} as text[]))`
            : sql<SessionRow>`select * from public_chat_sessions where session_id in (select value from json_each(${JSON.stringify(ids)}))`;
        const { rows } = await statement.execute(database.db);
        const byId = new Map(rows.map((row) => [row.session_id, row]));
        return sessionIds.map((id) => byId.get(id));
      },
    },
  },
);

export interface NewSession {
  session_id: string;
  client_ip: string | null;
  user_agent: string | null;
  referer: string | null;
  verified: boolean;
  now: string;
  expires_at: string;
}

/** The new session's row: seen, and verified when it is, now. */
function sessionRow(session: NewSession) {
  const { now, ...values } = session;
  return { ...values, verified_at: session.verified ? now : null, first_seen_at: now, last_seen_at: now, created_at: now, updated_at: now };
}

export async function insertSession(db: Db, session: NewSession): Promise<void> {
  await db.insertInto('public_chat_sessions').values(sessionRow(session)).execute();
}

/**
 * Creates a session and returns its row, counted (session_count, and
 * client_ip_count when its address is new) in the same write. On
 * PostgreSQL one statement of data-modifying CTEs: a new visitor's first
 * request costs one round trip rather than a transaction of six and a read
 * (the counter rows locked in name order, as bumpCounters does).
 */
export const createSession = onQueryThread('chat.createSession', async (database: Database, session: NewSession): Promise<SessionRow> => {
  const { now } = session;
  const row = sessionRow(session);
  if (database.dialect === 'postgres') {
    const db = database.db;
    const created = db.insertInto('public_chat_sessions').values(row).returningAll();
    // An address-less session notes no address (and client_ip_count gets 0, which is not written).
    const noted = session.client_ip
      ? db
          .insertInto('public_chat_client_ips')
          .values({ client_ip: session.client_ip, created_at: now })
          .onConflict((conflict) => conflict.column('client_ip').doNothing())
          .returning('client_ip')
      : sql`select null::text as client_ip where false`;
    const statement = sql<SessionRow>`with created as (${created}), noted as (${noted}),
      counted as (
        insert into public_chat_counters (name, shard, value)
        select c.name, ${COUNTER_SHARD}, c.value from (values ('client_ip_count', (select count(*) from noted)), ('session_count', 1)) as c(name, value)
        where c.value > 0 order by c.name
        on conflict (name, shard) do update set value = public_chat_counters.value + excluded.value
      )
      select * from created`;
    const { rows } = await statement.execute(db);
    return rows[0]!;
  }
  return database.transaction(async (trx) => {
    const created = await trx.insertInto('public_chat_sessions').values(row).returningAll().executeTakeFirstOrThrow();
    const newAddress = session.client_ip ? await noteClientIpOnly(trx, session.client_ip, now) : false;
    await bumpCounters(trx, { session_count: 1, client_ip_count: newAddress ? 1 : 0 });
    return created;
  });
});

export const markVerified = (db: Db, sessionId: string, now: string, expiresAt: string) =>
  db
    .updateTable('public_chat_sessions')
    .set({ verified: true, verified_at: now, active: true, last_seen_at: now, expires_at: expiresAt, updated_at: now })
    .where('session_id', '=', sessionId)
    .execute();

/** A session seen now, and (with `staleBefore`) its in-flight hold to take: a hold older than that is stale. */
type SessionSeen = { sessionId: string; client_ip: string | null; user_agent: string | null; now: string; expiresAt: string; staleBefore?: string };

/** No request holds the session's in-flight hold, or its hold is older than `staleBefore`. */
const holdFree = (staleBefore: string) => (eb: ExpressionBuilder<DB, 'public_chat_sessions'>) =>
  eb.or([eb('in_flight_since', 'is', null), eb('in_flight_since', '<', staleBefore)]);

/** The session marked used now; with `staleBefore`, its in-flight hold taken too, only when free. */
const seenSession = (db: Db, session: SessionSeen) =>
  db
    .updateTable('public_chat_sessions')
    .set({
      client_ip: session.client_ip,
      user_agent: session.user_agent,
      active: true,
      last_seen_at: session.now,
      expires_at: session.expiresAt,
      updated_at: session.now,
      ...(session.staleBefore === undefined ? {} : { in_flight_since: session.now }),
    })
    .where('session_id', '=', session.sessionId)
    .$if(session.staleBefore !== undefined, (update) => update.where(holdFree(session.staleBefore!)));

const seenSessionStatement = new StatementTemplate(seenSession);

export async function touchSession(db: Db, sessionId: string, client: { client_ip: string | null; user_agent: string | null }, now: string, expiresAt: string): Promise<void> {
  await seenSessionStatement.execute(db, { sessionId, ...client, now, expiresAt });
}

/**
 * touchSession and claimInFlight in one write (the hot path): marks the
 * session used now and takes its in-flight slot; false (nothing written)
 * when a request already holds it.
 */
async function touchAndClaimSession(
  db: Db,
  sessionId: string,
  client: { client_ip: string | null; user_agent: string | null },
  now: string,
  expiresAt: string,
  staleBefore: string,
): Promise<boolean> {
  const result = await seenSessionStatement.execute(db, { sessionId, ...client, now, expiresAt, staleBefore });
  return Number(result.numAffectedRows) === 1;
}

/** Takes the session's single in-flight slot; false when a request already holds it (a stale hold is taken over). */
export async function claimInFlight(db: Db, sessionId: string, now: string, staleBefore: string): Promise<boolean> {
  const result = await db
    .updateTable('public_chat_sessions')
    .set({ in_flight_since: now })
    .where('session_id', '=', sessionId)
    .where(holdFree(staleBefore))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export const releaseInFlight = (db: Db, sessionId: string) =>
  db.updateTable('public_chat_sessions').set({ in_flight_since: null }).where('session_id', '=', sessionId).execute();

/** A question of the session still being answered. */
export async function hasQuestionInFlight(db: Db, sessionId: string): Promise<boolean> {
  const row = await db.selectFrom('public_chat_messages').select('id').where('session_id', '=', sessionId).where('state', '=', 'processing').limit(1).executeTakeFirst();
  return row !== undefined;
}

/**
 * "New conversation": the next question opens a new thread, and the history
 * shows only messages newer than every message there is now.
 */
export const startConversation = (db: Db, sessionId: string, now: string) =>
  db
    .updateTable('public_chat_sessions')
    .set((eb) => ({
      thread_id: null,
      conversation_after_id: eb.selectFrom('public_chat_messages').select((inner) => inner.fn.coalesce(inner.fn.max('id'), sql<number>`0`).as('newest')),
      updated_at: now,
    }))
    .where('session_id', '=', sessionId)
    .execute();

const setThread = (db: Db, sessionId: string, threadId: string, now: string) =>
  db.updateTable('public_chat_sessions').set({ thread_id: threadId, updated_at: now }).where('session_id', '=', sessionId).execute();

/**
 * Stores the conversation a session's first question opened: on the
 * session, on the question (while `owner` holds it, with its next step) and
 * counted. One statement on PostgreSQL, a transaction on SQLite.
 */
export const storeThread = onQueryThread('chat.storeThread', async (database: Database, thread: { sessionId: string; messageId: number; owner: string; threadId: string; now: string }): Promise<void> => {
  const { sessionId, messageId, owner, threadId, now } = thread;
  const marked = { thread_id: threadId, step: 'creating_message', updated_at: now };
  if (database.dialect === 'postgres') {
    const db = database.db;
    const threaded = db.updateTable('public_chat_sessions').set({ thread_id: threadId, updated_at: now }).where('session_id', '=', sessionId);
    const owned = db.updateTable('public_chat_messages').set(marked).where('id', '=', messageId).where('owner', '=', owner);
    await sql`with threaded as (${threaded}), owned as (${owned}), counted as (${bumpCountersWhen(db, countersAsJson({ thread_count: 1 })!, sql<SqlBool>`true`)}) select 1`.execute(db);
    return;
  }
  await database.transaction(async (trx) => {
    await setThread(trx, sessionId, threadId, now);
    await bumpCounters(trx, { thread_count: 1 });
    await updateOwnedMessage(trx, messageId, owner, marked);
  });
});

const exchangeStatement = new StatementTemplate((db, { sessionId, outcome, now }: { sessionId: string; outcome: ExchangeOutcome; now: string }) =>
  exchangeOnSession(db, sessionId, outcome, now),
);

export async function recordExchangeOnSession(db: Db, sessionId: string, outcome: ExchangeOutcome, now: string): Promise<void> {
  await exchangeStatement.execute(db, { sessionId, outcome, now });
}

type ExchangeOutcome = { prompt_tokens: number; completion_tokens: number; total_tokens: number; error: string | null };

const exchangeOnSession = (db: Db, sessionId: string, outcome: ExchangeOutcome, now: string) =>
  db
    .updateTable('public_chat_sessions')
    .set((eb) => ({
      message_count: eb('message_count', '+', 1),
      prompt_tokens: eb('prompt_tokens', '+', outcome.prompt_tokens),
      completion_tokens: eb('completion_tokens', '+', outcome.completion_tokens),
      total_tokens: eb('total_tokens', '+', outcome.total_tokens),
      error: outcome.error,
      // The exchange is over: the session may ask again (its in-flight hold goes in the same write).
      in_flight_since: null,
      updated_at: now,
    }))
    .where('session_id', '=', sessionId);

export type MessageValues = Parameters<typeof insertMessage>[1];

export async function insertMessage(
  db: Db,
  message: {
    session_id: string;
    role: ChatRole;
    content: string;
    response?: string | null;
    state: string;
    client_ip: string | null;
    user_agent: string | null;
    client_message_id?: string | null;
    thread_id?: string | null;
    step?: string | null;
    attempts?: number;
    owner?: string | null;
    lease_expires_at?: string | null;
    openai_message_id?: string | null;
    run_id?: string | null;
    run_status?: string | null;
    prompt_tokens?: number;
    completion_tokens?: number;
    total_tokens?: number;
    processing_duration_ms?: number | null;
    response_latency_ms?: number | null;
    sources?: string | null;
    now: string;
  },
): Promise<number> {
  const { now, ...values } = message;
  const { rows } = await insertMessageStatement.execute<{ id: number }>(db, { row: { ...values, created_at: now, updated_at: now } });
  return rows[0]!.id;
}

type NewMessageRow = Omit<MessageValues, 'now'> & { created_at: string; updated_at: string };

const insertMessageStatement = new StatementTemplate((db, { row }: { row: NewMessageRow }) => db.insertInto('public_chat_messages').values(row).returning('id'));

export const updateMessage = (
  db: Db,
  id: number,
  changes: Partial<{
    response: string | null;
    state: string;
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    openai_message_id: string | null;
    run_id: string | null;
    run_status: string | null;
    processing_duration_ms: number | null;
    response_latency_ms: number | null;
    sources: string | null;
    error: string | null;
    thread_id: string | null;
    provider_message_id: string | null;
    step: string | null;
    owner: string | null;
    lease_expires_at: string | null;
  }> & { updated_at: string },
) => db.updateTable('public_chat_messages').set(changes).where('id', '=', id).execute();

/** Updates a question only while `owner` still holds it; false when another process took it over. */
export async function updateOwnedMessage(db: Db, id: number, owner: string, changes: Parameters<typeof updateMessage>[2]): Promise<boolean> {
  const result = await updateOwnedStatement.execute(db, { id, owner, changes });
  return Number(result.numAffectedRows) === 1;
}

const updateOwnedStatement = new StatementTemplate((db, { id, owner, changes }: { id: number; owner: string; changes: Parameters<typeof updateMessage>[2] }) =>
  db.updateTable('public_chat_messages').set(changes).where('id', '=', id).where('owner', '=', owner),
);

/** How far a question got at the provider (DESIGN §6), stored so that a restart resumes it instead of asking again. */
export interface ProgressMark {
  messageId: number;
  owner: string;
  changes: { provider_message_id?: string; run_id?: string; run_status?: string; step: string; updated_at: string };
}

/**
 * Stores the progress marks of several questions, each only while `owner`
 * still owns its question: one statement on PostgreSQL (the same text
 * whatever their number, so it stays prepared; the rows locked in id order,
 * see renewLeases), one transaction on SQLite.
 */
export const storeProgressMarks = onQueryThread('chat.storeProgressMarks', async (database: Database, marks: readonly ProgressMark[]): Promise<void> => {
  const oneEach = new Set(marks.map((mark) => mark.messageId)).size === marks.length;
  if (marks.length === 1 || database.dialect === 'sqlite' || !oneEach) {
    const store = async (db: Db) => {
      for (const mark of marks) await updateOwnedMessage(db, mark.messageId, mark.owner, mark.changes);
    };
    await (marks.length === 1 ? store(database.db) : database.transaction(store));
    return;
  }
  const column = <K extends keyof ProgressMark['changes']>(key: K) => marks.map((mark) => mark.changes[key] ?? null);
  const ids = marks.map((mark) => mark.messageId);
  await sql`
    with locked as (select id from public_chat_messages where id = any(cast(${ids} as bigint[])) order by id for update)
    update public_chat_messages as m
    set provider_message_id = coalesce(v.provider_message_id, m.provider_message_id),
        run_id = coalesce(v.run_id, m.run_id),
        run_status = coalesce(v.run_status, m.run_status),
        step = v.step,
        updated_at = v.updated_at
    from unnest(
      cast(${ids} as bigint[]), cast(${marks.map((mark) => mark.owner)} as text[]),
      cast(${column('provider_message_id')} as text[]), cast(${column('run_id')} as text[]), cast(${column('run_status')} as text[]),
      cast(${column('step')} as text[]), cast(${column('updated_at')} as timestamptz[])
    ) as v(id, owner, provider_message_id, run_id, run_status, step, updated_at)
    where m.id = v.id and m.owner = v.owner and m.id = any(cast(${ids} as bigint[])) and m.id in (select id from locked)`.execute(database.db);
}, { atTurnEnd: true });

/**
 * Keeps the owner's claim on the questions it is answering (DESIGN §9). On
 * PostgreSQL the rows are locked in id order, as the progress marks lock
 * theirs: two statements that each update several questions must not take
 * them in opposite orders (a deadlock, which PostgreSQL breaks only after a
 * second by failing one).
 */
export const renewLeases = onQueryThread('chat.renewLeases', async (database: Database, { owner, until }: { owner: string; until: string }): Promise<number> => {
  const held = database.db.selectFrom('public_chat_messages').select('id').where('state', '=', 'processing').where('owner', '=', owner);
  // An idle process has none: then it only reads (see releaseOrphanedInFlight).
  if (!(await held.limit(1).executeTakeFirst())) return 0;
  const result = await database.db
    .updateTable('public_chat_messages')
    .set({ lease_expires_at: until })
    .where('id', 'in', held.orderBy('id').$if(database.dialect === 'postgres', (qb) => qb.forUpdate()))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
});

/**
 * Questions whose owner is gone: still being answered, with a lease that ran
 * out before `now` — or, when `everyone`, any not held by `owner` (SQLite's
 * single process at start).
 */
export const abandonedQuestions = (db: Db, scope: { owner: string; now: string; everyone: boolean }, limit: number) =>
  db
    .selectFrom('public_chat_messages')
    .select('id')
    .where('state', '=', 'processing')
    .where('role', '=', 'user')
    .$if(scope.everyone, (qb) => qb.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '!=', scope.owner)])))
    // A process never takes over its own questions: it renews their leases itself.
    .$if(!scope.everyone, (qb) => qb.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '!=', scope.owner)])))
    .$if(!scope.everyone, (qb) => qb.where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', scope.now)])))
    .orderBy('id')
    .limit(limit)
    .execute();

/** Takes over an abandoned question (the same conditions, checked again atomically); the row, or undefined when another got it first. */
export const claimQuestion = (db: Db, id: number, scope: { owner: string; now: string; everyone: boolean; until: string }) =>
  db
    .updateTable('public_chat_messages')
    .set((eb) => ({ owner: scope.owner, lease_expires_at: scope.until, attempts: eb('attempts', '+', 1), updated_at: scope.now }))
    .where('id', '=', id)
    .where('state', '=', 'processing')
    .$if(scope.everyone, (qb) => qb.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '!=', scope.owner)])))
    .$if(!scope.everyone, (qb) => qb.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '!=', scope.owner)])))
    .$if(!scope.everyone, (qb) => qb.where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', scope.now)])))
    .returningAll()
    .executeTakeFirst();

/** Sessions holding their in-flight slot since before `heldBefore` with no question being answered. */
const orphanedInFlight = (heldBefore: string) => (eb: ExpressionBuilder<DB, 'public_chat_sessions'>) =>
  eb.and([
    eb('public_chat_sessions.in_flight_since', '<', heldBefore),
    eb.not(
      eb.exists(
        eb
          .selectFrom('public_chat_messages as message')
          .select('message.id')
          .whereRef('message.session_id', '=', 'public_chat_sessions.session_id')
          .where('message.state', '=', 'processing'),
      ),
    ),
  ]);

/**
 * Frees the in-flight slot of sessions that hold it with no question being
 * answered (their process stopped between the two). Every few seconds, and
 * nearly always there are none: it looks with a read first, since on SQLite
 * an UPDATE takes the write lock even when it changes nothing (see
 * ask-commands.queries.ts).
 */
export async function releaseOrphanedInFlight(db: Db, heldBefore: string): Promise<number> {
  const any = await db.selectFrom('public_chat_sessions').select('session_id').where(orphanedInFlight(heldBefore)).limit(1).executeTakeFirst();
  if (!any) return 0;
  const result = await db.updateTable('public_chat_sessions').set({ in_flight_since: null }).where(orphanedInFlight(heldBefore)).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The session's question sent with this client_message_id (a retry's first look: on the hot path, on the query thread). */
export const findMessageByClientId = onQueryThread('chat.findMessageByClientId', (database: Database, { sessionId, clientMessageId }: { sessionId: string; clientMessageId: string }) =>
  database.db
    .selectFrom('public_chat_messages')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('client_message_id', '=', clientMessageId)
    .where('role', '=', 'user')
    .executeTakeFirst(),
);

export const findMessage = (db: Db, id: number) => db.selectFrom('public_chat_messages').selectAll().where('id', '=', id).executeTakeFirst();

export type MessageRow = NonNullable<Awaited<ReturnType<typeof findMessage>>>;

/** The session's questions (user rows carry the answer too), newest first, with whether feedback was given; only those after `afterId` (the current conversation). */
/**
 * The session's exchanges (its questions' rows), newest first: `limit` of
 * them, after `afterId` (the conversation's start) and before `beforeId`
 * (a page's cursor) when given.
 */
export const sessionExchanges = (db: Db, sessionId: string, limit: number, range: { afterId?: number | null; beforeId?: number | undefined } = {}) =>
  db
    .selectFrom('public_chat_messages as message')
    .select(['message.id', 'message.content', 'message.response', 'message.error', 'message.state', 'message.sources', 'message.created_at'])
    .select((eb) =>
      eb
        .exists(eb.selectFrom('public_chat_feedback as feedback').select(sql`1`.as('one')).whereRef('feedback.public_chat_message_id', '=', 'message.id'))
        .as('feedback_submitted'),
    )
    .where('message.session_id', '=', sessionId)
    .where('message.role', '=', 'user')
    .$if(range.afterId != null, (qb) => qb.where('message.id', '>', range.afterId!))
    .$if(range.beforeId !== undefined, (qb) => qb.where('message.id', '<', range.beforeId!))
    .orderBy('message.id', 'desc')
    .limit(limit)
    .execute();

/** How many of the session's exchanges lie between `afterId` (the conversation's start) and `beforeId`. */
export async function countSessionExchanges(db: Db, sessionId: string, range: { afterId: number | null; beforeId: number }): Promise<number> {
  const row = await db
    .selectFrom('public_chat_messages')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('session_id', '=', sessionId)
    .where('role', '=', 'user')
    .$if(range.afterId !== null, (qb) => qb.where('id', '>', range.afterId!))
    .where('id', '<', range.beforeId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Stores the session's feedback of one type on a message, replacing what it
 * gave of that type before (one per type per message per session). Returns
 * whether it is new (not a replacement), for the counters.
 */
export async function saveFeedback(
  db: Db,
  feedback: {
    public_chat_message_id: number;
    session_id: string;
    type: string;
    description: string | null;
    detail: string | null;
    client_ip: string | null;
    user_agent: string | null;
    now: string;
  },
): Promise<{ created: boolean }> {
  const { now, ...values } = feedback;
  // Insert-or-nothing first, so a concurrent twin waits on the unique index instead of failing on it.
  const inserted = await db
    .insertInto('public_chat_feedback')
    .values({ ...values, created_at: now, updated_at: now })
    .onConflict((conflict) => conflict.columns(['public_chat_message_id', 'session_id', 'type']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { created: true };
  await db
    .updateTable('public_chat_feedback')
    .set({ description: values.description, detail: values.detail, client_ip: values.client_ip, user_agent: values.user_agent, created_at: now, updated_at: now })
    .where('public_chat_message_id', '=', values.public_chat_message_id)
    .where('session_id', '=', values.session_id)
    .where('type', '=', values.type)
    .execute();
  return { created: false };
}

/** Records a verification token as spent; false when it was presented before. */
export async function spendToken(db: Db, tokenHash: string, now: string): Promise<boolean> {
  const result = await db
    .insertInto('spent_verification_tokens')
    .values({ token_hash: tokenHash, created_at: now })
    .onConflict((conflict) => conflict.column('token_hash').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** Forgets spent verification tokens and rate-limit windows from before the given times (housekeeping). */
export async function deleteOldChatRecords(db: Db, cutoffs: { spentTokensBefore: string; rateLimitWindowsBefore: string }) {
  const tokens = await db.deleteFrom('spent_verification_tokens').where('created_at', '<', cutoffs.spentTokensBefore).executeTakeFirst();
  const windows = await db.deleteFrom('public_chat_rate_limits').where('window_end', '<', cutoffs.rateLimitWindowsBefore).executeTakeFirst();
  return { spentTokens: Number(tokens.numDeletedRows), rateLimitWindows: Number(windows.numDeletedRows) };
}

/**
 * Adds to the running totals the Status screen reads (public_chat_counters).
 * Call it in the transaction that writes the rows it counts. One statement
 * for all the changes, keys in sorted order, so concurrent transactions lock
 * the counter rows in the same order (no deadlocks on PostgreSQL) and an
 * answer pays one round trip, not one per counter.
 */
export async function bumpCounters(db: Db, deltas: Record<string, number>): Promise<void> {
  const rows = counterRows(deltas);
  if (rows.length === 0) return;
  if (onPostgres(db)) await bumpCountersWhen(db, JSON.stringify(rows), sql<SqlBool>`true`).execute();
  else await bumpCountersStatement.execute(db, { rows });
}

/** bumpCounters on SQLite: the rows go to shard 0, the column's default. */
const bumpCountersStatement = new StatementTemplate((db, { rows }: { rows: { name: string; value: number }[] }) =>
  db
    .insertInto('public_chat_counters')
    .values(rows)
    .onConflict((conflict) => conflict.columns(['name', 'shard']).doUpdateSet((eb) => ({ value: eb('public_chat_counters.value', '+', eb.ref('excluded.value')) }))),
);

/** The counter changes as rows, zeros left out, in name order (the order their rows are locked in). */
const counterRows = (deltas: Record<string, number>) =>
  Object.entries(deltas)
    .filter(([, delta]) => delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ name, value }));

/** Sets a counter to `value`, whatever its shards held (in a transaction, so no one reads it half set). */
export async function setCounter(db: Db, name: string, value: number): Promise<void> {
  await db.deleteFrom('public_chat_counters').where('name', '=', name).execute();
  await db.insertInto('public_chat_counters').values({ name, value }).execute();
}

/** Every counter's value: the sum of its shards. */
export const readCounters = (db: Db) =>
  db
    .selectFrom('public_chat_counters')
    .select((eb) => ['name', eb.fn.sum<number | string>('value').as('value')])
    .groupBy('name')
    .execute();

/** Records a client address; counts it when it is new. */
export async function noteClientIp(db: Db, clientIp: string | null, now: string): Promise<void> {
  if (clientIp && (await noteClientIpOnly(db, clientIp, now))) await bumpCounters(db, { client_ip_count: 1 });
}

/** Records a client address without counting it; true when it is new. */
async function noteClientIpOnly(db: Db, clientIp: string, now: string): Promise<boolean> {
  const result = await db
    .insertInto('public_chat_client_ips')
    .values({ client_ip: clientIp, created_at: now })
    .onConflict((conflict) => conflict.column('client_ip').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** Records a session that hit the rate limit; counts it the first time. */
export async function noteLimited(db: Db, identifier: string, now: string): Promise<void> {
  const result = await db
    .insertInto('public_chat_limited_identifiers')
    .values({ identifier, created_at: now })
    .onConflict((conflict) => conflict.column('identifier').doNothing())
    .executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0n) > 0) await bumpCounters(db, { limited_session_count: 1 });
}

/*
 * The hot path's two transactions as one statement each on PostgreSQL.
 *
 * A question costs two multi-statement transactions: storing it (the
 * question's row, the session touched and its in-flight hold taken, the
 * counters) and storing its outcome (the question's row, the answer's row,
 * the session's totals, the counters). On PostgreSQL each statement, BEGIN
 * and COMMIT included, is a round trip, and round trips are most of what
 * the database costs the server's thread. There, each transaction is one
 * statement of data-modifying CTEs, atomic as a single statement is: the
 * first CTE is the write the others depend on (the session claimed, the
 * question still owned), and each of the others writes only when it wrote.
 * New rows are read from JSON with json_populate_record, so PostgreSQL
 * types every value by its column. SQLite has no data-modifying CTEs and no
 * round trips; it keeps the transaction.
 */

/** `exists (select 1 from <cte>)`: the guard of the CTEs that depend on the first one. */
const wrote = (cte: string) => sql<SqlBool>`exists (select 1 from ${sql.table(cte)})`;

/** A new public_chat_messages row as the CTEs insert it: its columns (the keys of `row`) and its values as JSON. */
interface MessageAsJson {
  row: NewMessageRow;
  json: string;
}

/** A new message's row: its values, created and updated `now`. */
function messageRow(message: MessageValues): NewMessageRow {
  const { now, ...values } = message;
  return { ...values, created_at: now, updated_at: now };
}

function messageAsJson(message: MessageValues): MessageAsJson {
  const row = messageRow(message);
  return { row, json: JSON.stringify(row) };
}

/** INSERT … SELECT of one public_chat_messages row (given as JSON) when `guard` holds. */
function insertMessageWhen(db: Db, message: MessageAsJson, guard: Expression<SqlBool>) {
  const columns = columnsOf(message.row) as (keyof NewMessageRow & 'content')[];
  return db
    .insertInto('public_chat_messages')
    .columns(columns)
    .expression(
      db
        .selectFrom(sql`json_populate_record(null::public_chat_messages, ${message.json}::json)`.as('r'))
        .select(columns.map((column) => sql.ref(`r.${column}`).as(column)))
        .where(guard),
    );
}

/** The columns a row's values set: its keys, less those whose value is undefined (StatementTemplate and Kysely leave them out too). */
const columnsOf = (row: object): string[] => Object.entries(row).flatMap(([column, value]) => (value === undefined ? [] : [column]));

/** The counter changes of bumpCounters as JSON rows for bumpCountersWhen; undefined when there is nothing to add. */
function countersAsJson(deltas: Record<string, number>): string | undefined {
  const rows = counterRows(deltas);
  return rows.length === 0 ? undefined : JSON.stringify(rows);
}

/** The counter upsert of bumpCounters on PostgreSQL (rows given as JSON, countersAsJson) when `guard` holds, to this connection's shard. */
function bumpCountersWhen(db: Db, rowsJson: string, guard: Expression<SqlBool>) {
  return db
    .insertInto('public_chat_counters')
    .columns(['name', 'shard', 'value'])
    .expression(
      db
        .selectFrom(sql`json_populate_recordset(null::public_chat_counters, ${rowsJson}::json)`.as('c'))
        .select([sql.ref<string>('c.name').as('name'), COUNTER_SHARD.as('shard'), sql.ref<number>('c.value').as('value')])
        .where(guard),
    )
    .onConflict((conflict) => conflict.columns(['name', 'shard']).doUpdateSet((eb) => ({ value: eb('public_chat_counters.value', '+', eb.ref('excluded.value')) })));
}

/** insertQuestion's statement on PostgreSQL; the session's `staleBefore` and `counters` are left out when there is none. */
const insertQuestionStatement = new StatementTemplate(
  (
    db,
    v: {
      session: SessionSeen;
      message: MessageAsJson;
      counters?: string;
    },
  ) => {
    const claimed = seenSession(db, v.session).returning('session_id');
    const counters = v.counters === undefined ? null : bumpCountersWhen(db, v.counters, wrote('claimed'));
    return sql<{ id: number }>`with claimed as (${claimed}), inserted as (${insertMessageWhen(db, v.message, wrote('claimed')).returning('id')})${
      counters ? sql`, counted as (${counters})` : sql``
    } select id from inserted`;
  },
);

/** storeOutcome's statement on PostgreSQL; `answer` and `counters` are left out when there is none. */
const storeOutcomeStatement = new StatementTemplate(
  (
    db,
    v: {
      messageId: number;
      owner: string;
      changes: Parameters<typeof updateMessage>[2];
      answer?: MessageAsJson;
      sessionId: string;
      exchange: ExchangeOutcome;
      now: string;
      counters?: string;
    },
  ) => {
    const owned = db.updateTable('public_chat_messages').set(v.changes).where('id', '=', v.messageId).where('owner', '=', v.owner).returning('id');
    const parts = [sql`owned as (${owned})`];
    if (v.answer) parts.push(sql`answer as (${insertMessageWhen(db, v.answer, wrote('owned'))})`);
    parts.push(sql`exchanged as (${exchangeOnSession(db, v.sessionId, v.exchange, v.now).where(wrote('owned'))})`);
    if (v.counters !== undefined) parts.push(sql`counted as (${bumpCountersWhen(db, v.counters, wrote('owned'))})`);
    return sql<{ id: number }>`with ${sql.join(parts)} select id from owned`;
  },
);

/**
 * Stores a question with its session touched (and, with `claimStaleBefore`,
 * its in-flight hold taken: a hold older than that is stale) and the
 * counters. Returns the question's id, or null when another request holds
 * the session's hold (nothing is written). `newClientIp`: the session came
 * from another address, which is noted (and counted when new).
 */
export interface NewQuestion {
  message: MessageValues;
  session: { session_id: string; client_ip: string | null; user_agent: string | null; now: string; expires_at: string };
  claimStaleBefore: string | null;
  newClientIp: boolean;
  counters: Record<string, number>;
}

export const insertQuestion = onQueryThread('chat.insertQuestion', async (database: Database, question: NewQuestion): Promise<number | null> => {
  const { session, claimStaleBefore } = question;
  const seen = { client_ip: session.client_ip, user_agent: session.user_agent };
  if (database.dialect === 'postgres' && !question.newClientIp) {
    const { rows } = await insertQuestionStatement.execute<{ id: number }>(database.db, {
      session: { sessionId: session.session_id, ...seen, now: session.now, expiresAt: session.expires_at, staleBefore: claimStaleBefore ?? undefined },
      message: messageAsJson(question.message),
      counters: countersAsJson(question.counters),
    });
    return rows[0]?.id ?? null;
  }
  try {
    return await database.transaction(async (trx) => {
      const id = await insertMessage(trx, question.message);
      if (claimStaleBefore === null) await touchSession(trx, session.session_id, seen, session.now, session.expires_at);
      else if (!(await touchAndClaimSession(trx, session.session_id, seen, session.now, session.expires_at, claimStaleBefore))) throw new SessionHeld();
      await bumpCounters(trx, question.counters);
      if (question.newClientIp) await noteClientIp(trx, session.client_ip, session.now);
      return id;
    });
  } catch (error) {
    if (error instanceof SessionHeld) return null;
    throw error;
  }
}, {
  batch: {
    dialects: ['postgres'],
    // A question from a new address notes the address too: it goes alone.
    shape: (question) => (question.newClientIp ? undefined : columnsOf(question.message).join(',')),
    keys: (question) => [question.session.session_id],
    run: (database, questions) => insertQuestions(database.db, questions),
  },
});

/** Rolls insertQuestion's transaction back when the session's hold is taken. */
class SessionHeld extends Error {}

/**
 * Stores the outcome of a question while `owner` still holds it: the
 * question's row changed, an assistant row added (when `answer` is given),
 * the exchange recorded on the session (its in-flight hold released) and
 * the counters added. False, and nothing written, when another process took
 * the question over.
 */
export interface Outcome {
  messageId: number;
  owner: string;
  changes: Parameters<typeof updateMessage>[2];
  answer: MessageValues | null;
  sessionId: string;
  exchange: ExchangeOutcome;
  now: string;
  counters: Record<string, number>;
}

export const storeOutcome = onQueryThread('chat.storeOutcome', async (database: Database, outcome: Outcome): Promise<boolean> => {
  if (database.dialect === 'postgres') {
    const { rows } = await storeOutcomeStatement.execute(database.db, {
      messageId: outcome.messageId,
      owner: outcome.owner,
      changes: outcome.changes,
      answer: outcome.answer ? messageAsJson(outcome.answer) : undefined,
      sessionId: outcome.sessionId,
      exchange: outcome.exchange,
      now: outcome.now,
      counters: countersAsJson(outcome.counters),
    });
    return rows.length > 0;
  }
  return database.transaction(async (trx) => {
    if (!(await updateOwnedMessage(trx, outcome.messageId, outcome.owner, outcome.changes))) return false;
    if (outcome.answer) await insertMessage(trx, outcome.answer);
    await recordExchangeOnSession(trx, outcome.sessionId, outcome.exchange, outcome.now);
    await bumpCounters(trx, outcome.counters);
    return true;
  });
}, {
  batch: {
    dialects: ['postgres'],
    shape: (outcome) => `${columnsOf(outcome.changes).join(',')}|${outcome.answer ? columnsOf(outcome.answer).join(',') : '-'}`,
    keys: (outcome) => [`message:${outcome.messageId}`, `session:${outcome.sessionId}`],
    run: (database, outcomes) => storeOutcomes(database.db, outcomes),
  },
});

/*
 * The same two writes for several questions in one statement (PostgreSQL):
 * the batches of the query thread (OperationBatch), for the questions
 * stored, and the outcomes that ended, in one turn of the server's event
 * loop. Each call's values are one element of a JSON array, numbered `i`;
 * the rows they lock (questions by id, sessions by id) are locked first in
 * that order, as storeProgressMarks and renewLeases lock theirs, so that two
 * such statements never wait on each other in opposite orders; the counters
 * of every call written are added up by name into one upsert. The batch's
 * calls share a shape (their columns) and never a question or a session.
 *
 * The rows are found by an array of their keys (`= any(…)`), not only by a
 * join with the JSON's rows: PostgreSQL takes a function's result for 100
 * rows, and for 100 rows it scanned the whole sessions and questions tables
 * rather than use their keys' indexes. It did so at 3,000 sessions, and
 * these scans were more than half of each statement's time (0.8 ms each);
 * the array tells it how many rows there are.
 */

/** A public_chat_messages INSERT's column list, and the same columns read from the row `from` (json_populate_record's). */
const messageColumns = (columns: readonly string[], from: string) => ({
  into: sql.join(columns.map((column) => sql.id(column))),
  values: sql.join(columns.map((column) => sql.ref(`${from}.${column}`))),
});

/** Adds up the counters (`counters`, JSON rows as countersAsJson writes them) of the rows of `calls` that `written` names, into this connection's shard. */
const countersOfWritten = (calls: string, written: string, on: string) =>
  sql.raw(`insert into public_chat_counters (name, shard, value)
    select c.name, pg_backend_pid() % ${COUNTER_SHARDS}, sum(c.value)
    from ${calls} join ${written} on ${on}
    cross join lateral json_populate_recordset(null::public_chat_counters, ${calls}.counters) as c
    group by c.name order by c.name
    on conflict (name, shard) do update set value = public_chat_counters.value + excluded.value`);

/** insertQuestion for several questions (of distinct sessions, with no new address, their rows of one shape): each one's id, or null when its session's hold is taken. */
async function insertQuestions(db: Db, questions: NewQuestion[]): Promise<(number | null)[]> {
  const calls = questions.map((question, i) => ({
    i,
    session_id: question.session.session_id,
    client_ip: question.session.client_ip,
    user_agent: question.session.user_agent,
    now: question.session.now,
    expires_at: question.session.expires_at,
    stale_before: question.claimStaleBefore,
    message: messageRow(question.message),
    counters: counterRows(question.counters),
  }));
  const message = messageColumns(columnsOf(calls[0]!.message), 'r');
  const sessionIds = calls.map((call) => call.session_id);
  const { rows } = await sql<{ i: number; id: number }>`
    with v as (
      select * from json_to_recordset(cast(${JSON.stringify(calls)} as json))
        as v(i int, session_id text, client_ip text, user_agent text, now timestamptz, expires_at timestamptz, stale_before timestamptz, message json, counters json)
    ),
    locked as (select session_id from public_chat_sessions where session_id = any(cast(${sessionIds} as text[])) order by session_id for update),
    claimed as (
      -- seenSession's columns, with its hold taken as it takes it: change the two together.
      update public_chat_sessions as s
      set client_ip = v.client_ip, user_agent = v.user_agent, active = true, last_seen_at = v.now, expires_at = v.expires_at, updated_at = v.now,
          in_flight_since = case when v.stale_before is null then s.in_flight_since else v.now end
      from v
      where s.session_id = v.session_id and s.session_id = any(cast(${sessionIds} as text[])) and s.session_id in (select session_id from locked)
        and (v.stale_before is null or s.in_flight_since is null or s.in_flight_since < v.stale_before)
      returning s.session_id
    ),
    inserted as (
      insert into public_chat_messages (${message.into})
      select ${message.values} from v join claimed on claimed.session_id = v.session_id
      cross join lateral json_populate_record(null::public_chat_messages, v.message) as r
      order by v.i
      returning id, session_id
    ),
    counted as (${countersOfWritten('v', 'claimed', 'claimed.session_id = v.session_id')})
    select v.i, inserted.id from v join inserted on inserted.session_id = v.session_id`.execute(db);
  const ids = new Map(rows.map((row) => [row.i, Number(row.id)]));
  return questions.map((_, i) => ids.get(i) ?? null);
}

/** storeOutcome for several questions (distinct, of distinct sessions, their changes and answers of one shape): whether each was still owned, and so stored. */
async function storeOutcomes(db: Db, outcomes: Outcome[]): Promise<boolean[]> {
  const calls = outcomes.map((outcome, i) => ({
    i,
    id: outcome.messageId,
    owner: outcome.owner,
    session_id: outcome.sessionId,
    changes: outcome.changes,
    answer: outcome.answer ? messageRow(outcome.answer) : null,
    ...outcome.exchange,
    now: outcome.now,
    counters: counterRows(outcome.counters),
  }));
  const changed = columnsOf(outcomes[0]!.changes);
  const answer = outcomes[0]!.answer ? messageColumns(columnsOf(calls[0]!.answer!), 'r') : null;
  const ids = calls.map((call) => call.id);
  const sessionIds = calls.map((call) => call.session_id);
  const { rows } = await sql<{ i: number }>`
    with v as (
      select * from json_to_recordset(cast(${JSON.stringify(calls)} as json))
        as v(i int, id bigint, owner text, session_id text, changes json, answer json,
             prompt_tokens bigint, completion_tokens bigint, total_tokens bigint, error text, now timestamptz, counters json)
    ),
    locked as (select id from public_chat_messages where id = any(cast(${ids} as bigint[])) order by id for update),
    owned as (
      update public_chat_messages as m
      set ${sql.join(changed.map((column) => sql`${sql.id(column)} = ${sql.ref(`c.${column}`)}`))}
      from v cross join lateral json_populate_record(null::public_chat_messages, v.changes) as c
      where m.id = v.id and m.owner = v.owner and m.id = any(cast(${ids} as bigint[])) and m.id in (select id from locked)
      returning m.id
    ),${
      answer
        ? sql`
    answer as (
      insert into public_chat_messages (${answer.into})
      select ${answer.values} from v join owned on owned.id = v.id
      cross join lateral json_populate_record(null::public_chat_messages, v.answer) as r
      order by v.i
    ),`
        : sql``
    }
    sessions as (select session_id from public_chat_sessions where session_id = any(cast(${sessionIds} as text[])) order by session_id for update),
    exchanged as (
      -- exchangeOnSession's columns: change the two together.
      update public_chat_sessions as s
      set message_count = s.message_count + 1, prompt_tokens = s.prompt_tokens + v.prompt_tokens, completion_tokens = s.completion_tokens + v.completion_tokens,
          total_tokens = s.total_tokens + v.total_tokens, error = v.error, in_flight_since = null, updated_at = v.now
      from v join owned on owned.id = v.id
      where s.session_id = v.session_id and s.session_id = any(cast(${sessionIds} as text[])) and s.session_id in (select session_id from sessions)
    ),
    counted as (${countersOfWritten('v', 'owned', 'owned.id = v.id')})
    select v.i from v join owned on owned.id = v.id`.execute(db);
  const stored = new Set(rows.map((row) => row.i));
  return outcomes.map((_, i) => stored.has(i));
}
