import { existsSync, statSync } from 'node:fs';
import { sql } from 'kysely';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { sqliteFileForEachTest } from '../test-support/sqlite-file.ts';
import { testDatabaseKind } from '../test-support/test-context.ts';
import { openDatabase, type Database } from './database.ts';
import type { CheckpointResult } from './sqlite-checkpoint-worker.ts';
import { SQLITE_AUTOCHECKPOINT_PAGES } from './sqlite-checkpointer.ts';

const logLines: { level: number; msg: string }[] = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line) as { level: number; msg: string }) });

describe.runIf(testDatabaseKind() === 'sqlite')('SQLite checkpoints in a thread of their own', () => {
  const temp = sqliteFileForEachTest('checkpoint');
  beforeEach(() => {
    logLines.length = 0;
  });

  const open = async () => (temp.database = await openDatabase(`sqlite:${temp.file}`, { logger, checkpointThread: true }));
  const autocheckpoint = async (db: Database) => Object.values((await sql.raw('pragma wal_autocheckpoint').execute(db.db)).rows[0] as object)[0];
  const walBytes = () => (existsSync(`${temp.file}-wal`) ? statSync(`${temp.file}-wal`).size : 0);
  /** `count` commits of one 1 KB row each: a page or two of log apiece. */
  const commits = async (db: Database, count: number) => {
    for (let i = 0; i < count; i++) await sql`insert into notes (body) values (${'x'.repeat(1024)})`.execute(db.db);
  };
  /** Resolves at the first checkpoint that copies the whole log. */
  const fullCheckpoint = (db: Database) =>
    new Promise<CheckpointResult>((resolve) => {
      const stop = db.checkpointer!.onCheckpoint((result) => {
        if (result.checkpointedFrames !== result.logFrames) return;
        stop();
        resolve(result);
      });
    });

  it('turns the connection’s own checkpoints off and keeps the log small while thousands of commits land', async () => {
    const db = await open();
    expect(db.checkpointer).toBeDefined();
    expect(await autocheckpoint(db)).toBe(0);
    await sql`create table notes (id integer primary key, body text not null)`.execute(db.db);

    // 12 × 300 commits write about 25 MB of log; with nobody checkpointing, the log file would hold all of it.
    let largest = 0;
    for (let batch = 0; batch < 12; batch++) {
      await commits(db, 300);
      largest = Math.max(largest, walBytes());
      const result = await fullCheckpoint(db);
      expect(result.logFrames).toBeGreaterThan(0);
    }
    expect(largest).toBeLessThan(8 * 1024 * 1024);
    const { rows } = await sql<{ n: number }>`select count(*) as n from notes`.execute(db.db);
    expect(rows[0]!.n).toBe(3600);
  });

  it('goes back to checkpointing by itself when the thread stops', async () => {
    const db = await open();
    await db.checkpointer!.thread.terminate();
    await expect.poll(() => autocheckpoint(db)).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
    expect(logLines.some((line) => line.level === 50 && /checkpoint thread stopped/.test(line.msg))).toBe(true);

    // SQLite's own checkpoints keep the log from growing again.
    await sql`create table notes (id integer primary key, body text not null)`.execute(db.db);
    await commits(db, 3000);
    expect(walBytes()).toBeLessThan(8 * 1024 * 1024);
  });

  it('stops the thread on close, and the last connection folds the log into the file', async () => {
    const db = await open();
    await sql`create table notes (id integer primary key, body text not null)`.execute(db.db);
    await commits(db, 50);
    const thread = db.checkpointer!.thread;
    await db.close();
    temp.database = undefined;
    expect(thread.threadId).toBe(-1);
    expect(walBytes()).toBe(0);

    const again = await openDatabase(`sqlite:${temp.file}`);
    const { rows } = await sql<{ n: number }>`select count(*) as n from notes`.execute(again.db);
    expect(rows[0]!.n).toBe(50);
    await again.close();
  });

  it('needs no thread for an in-memory database or when not asked for', async () => {
    const memory = await openDatabase('sqlite::memory:', { checkpointThread: true });
    expect(memory.checkpointer).toBeUndefined();
    await memory.close();
    const plain = (temp.database = await openDatabase(`sqlite:${temp.file}`));
    expect(plain.checkpointer).toBeUndefined();
    expect(await autocheckpoint(plain)).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
  });
});
