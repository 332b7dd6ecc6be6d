import type { Database } from '../db/database.ts';

/**
 * The same database, with every statement run through its `db` noted (its
 * kind: SelectQueryNode, InsertQueryNode, RawNode…) as it completes: for
 * tests that check how many round trips something makes. The queries built
 * into a `sql` statement (a CTE's parts) are not statements of their own.
 */
export function countedStatements(database: Database): { database: Database; statements: string[] } {
  const statements: string[] = [];
  const kinds = new Map<unknown, string>();
  const counted: Database = {
    ...database,
    // Operations declared for the query thread run here, on this connection, where their statements are seen.
    queryThread: undefined,
    db: database.db.withPlugin({
      transformQuery: (args) => {
        kinds.set(args.queryId, args.node.kind);
        return args.node;
      },
      transformResult: async (args) => {
        statements.push(kinds.get(args.queryId) ?? 'unknown');
        return args.result;
      },
    }),
    transaction: (fn) => database.transaction(fn),
    ping: (timeoutMs) => database.ping(timeoutMs),
    close: () => database.close(),
  };
  return { database: counted, statements };
}
