/**
 * The database query thread (query-thread.ts): its own connection to the
 * server's SQLite file (or its own PostgreSQL pool), running the operations declared with onQueryThread
 * as the server's event loop posts them, and posting back each result once
 * it is committed.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import { pino } from 'pino';
import { openDatabase } from './database.ts';
import {
  batchCalls,
  queryThreadBatches,
  queryThreadOperations,
  toThreadError,
  type FromQueryThread,
  type QueryAnswer,
  type QueryCall,
  type QueryThreadData,
  type ToQueryThread,
} from './query-thread.ts';
// The modules that declare operations: importing them declares them here too.
import '../chat/chat.queries.ts';
import '../limits/limits.queries.ts';
import '../assistant/assistant.queries.ts';
import '../ask/token-budget.ts';
import '../admin/status.queries.ts';
import '../cluster/cluster.queries.ts';

const { url, schema, poolSize, autocheckpoint } = workerData as QueryThreadData;
const parent = parentPort!;
const post = (message: FromQueryThread) => parent.postMessage(message);
/** Lines go to the server's logger, which adds its time and pid and applies its level and redaction. */
const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (line: string) => post({ kind: 'log', line }) });

try {
  const database = await openDatabase(url, { schema, poolSize, applicationName: 'concierge query thread', keyedStatements: true, logger });
  // The server's checkpoint thread copies the log back; this connection's commits do not.
  if (database.dialect === 'sqlite' && !autocheckpoint) await sql`pragma wal_autocheckpoint = 0`.execute(database.db);
  const operations = queryThreadOperations();
  const batches = queryThreadBatches();
  const running = new Set<Promise<unknown>>();
  /** Answers of this turn, posted together at its end. */
  let answers: QueryAnswer[] = [];
  const flush = () => {
    const batch = answers;
    if (batch.length === 0) return;
    answers = [];
    try {
      post({ kind: 'answers', answers: batch });
    } catch {
      // A result that cannot be cloned fails its own call only.
      for (const answer of batch) {
        try {
          post({ kind: 'answers', answers: [answer] });
        } catch (error) {
          post({ kind: 'answers', answers: [{ id: answer.id, error: toThreadError(error) }] });
        }
      }
    }
  };
  const answer = (reply: QueryAnswer) => {
    answers.push(reply);
    if (answers.length === 1) setImmediate(flush);
  };

  /** Work under way, which a stop waits for. */
  const track = (done: Promise<void>) => {
    running.add(done);
    void done.finally(() => running.delete(done));
  };
  /** Runs one call and answers it; settles once answered. */
  const alone = ({ id, name, args }: QueryCall): Promise<void> => {
    const operation = operations.get(name);
    const work = operation ? operation(database, args as never) : Promise.reject(new Error(`no database operation is named ${name}`));
    return work.then(
      (result) => answer({ id, result }),
      (error: unknown) => answer({ id, error: toThreadError(error) }),
    );
  };
  const runAlone = (call: QueryCall) => track(alone(call));

  parent.on('message', (message: ToQueryThread) => {
    if (message.kind === 'stop') {
      void Promise.allSettled(running).then(async () => {
        flush();
        await database.close();
        // Ends the thread, whatever handles the closed pools leave behind (pg's keep the loop alive for a while).
        parent.close();
        process.exit(0);
      });
      return;
    }
    // Calls of an operation that batches go together (OperationBatch); a failed batch wrote nothing, and its calls run alone.
    const together = new Map<string, QueryCall[]>();
    for (const call of message.calls) {
      const batch = batches.get(call.name);
      if (!batch?.dialects.includes(database.dialect)) runAlone(call);
      else {
        const calls = together.get(call.name);
        if (calls) calls.push(call);
        else together.set(call.name, [call]);
      }
    }
    for (const [name, calls] of together) {
      const batch = batches.get(name)!;
      const grouped = batchCalls(calls, batch);
      for (const call of grouped.alone) runAlone(call);
      for (const group of grouped.batches) {
        const work = (async () => batch.run(database, group.map((call) => call.args as never)))();
        // Tracked until the calls are answered, after their second try when the batch failed (a stop waits for them).
        track(
          work.then(
            (results) => group.forEach((call, index) => answer({ id: call.id, result: results[index] })),
            async (error: unknown) => {
              logger.warn({ err: error, operation: name, calls: group.length }, 'a batch of calls failed and wrote nothing; each call runs alone');
              await Promise.all(group.map(alone));
            },
          ),
        );
      }
    }
  });
  post({ kind: 'ready', operations: [...operations.keys()] });
} catch (error) {
  post({ kind: 'failed', error: toThreadError(error) });
  parent.close();
}
