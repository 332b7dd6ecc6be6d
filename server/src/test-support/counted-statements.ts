import type { Database } from '../db/database.ts';

/**
 * The same database, with every statement made through its `db` noted (its
 * kind: SelectQueryNode, InsertQueryNode, RawNode…): for tests that check
 * how many round trips something makes.
 */
export function countedStatements(database: Database): { database: Database; statements: string[] } {
  const statements: string[] = [];
  const counted: Database = {
    ...database,
    db: database.db.withPlugin({
      transformQuery: (args) => {
        statements.push(args.node.kind);
        return args.node;
      },
      transformResult: async (args) => args.result,
    }),
    transaction: (fn) => database.transaction(fn),
    ping: (timeoutMs) => database.ping(timeoutMs),
    close: () => database.close(),
  };
  return { database: counted, statements };
}
