/**
 * Operator commands run from the server's shell, with the server's environment:
 *
 *   npm run admin -- reset-password <username>
 *   npm run admin -- backup <file>
 *   npm run admin -- copy-to <postgres-url>
 *
 * reset-password asks for the new password twice on a terminal (not echoed),
 * or reads it from the first line of standard input when piped
 * (`printf 'new password\n' | npm run admin -- reset-password alice`).
 * Admin accounts are otherwise only created through first-time setup, so this
 * is the way back in for an operator who lost the password.
 *
 * backup writes a consistent copy of the SQLite database while the server
 * runs; copy-to moves everything from SQLite to a new PostgreSQL database.
 */
import { PASSWORD_MAX, PASSWORD_MIN } from '@concierge/contract';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { AuthService } from '../auth/auth.service.ts';
import { systemClock } from '../clock.ts';
import { EnvError, loadEnv, type Env } from '../config/env.ts';
import { backupSqlite, checkTargetIsNew, copySqliteToPostgres } from '../db/copy.ts';
import { dialectOf, openDatabase, type Database } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { AppError } from '../errors.ts';
import { Loggers } from '../logging.ts';

export interface AdminIo {
  env: Record<string, string | undefined>;
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable;
  stderr: Writable;
  /** PostgreSQL schema to work in (tests). */
  databaseSchema?: string;
  /** PostgreSQL schema of copy-to's target (tests). */
  targetSchema?: string;
}

const USAGE = `Usage: npm run admin -- <command>

Commands:
  reset-password <username>   Set a new password for an admin, sign out all of their sessions and clear the sign-in limits.
  backup <file>               Write a consistent copy of the SQLite database to <file> (a new file),
                              safe while the server runs. PostgreSQL: use pg_dump (README).
  copy-to <postgres-url>      Copy every table of the SQLite database (DATABASE_URL) into a new, empty
                              PostgreSQL database, migrating it first; then point DATABASE_URL at it.
`;

/** Runs one admin command; resolves to the process exit code. */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'reset-password' && rest.length === 1) return resetPassword(rest[0]!, io);
  if (command === 'backup' && rest.length === 1) return backup(rest[0]!, io);
  if (command === 'copy-to' && rest.length === 1) return copyTo(rest[0]!, io);
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  io.stderr.write(`Unknown command or wrong arguments: ${argv.join(' ')}\n\n${USAGE}`);
  return 2;
}

/** The environment, or undefined after writing what is wrong with it. */
function environment(io: AdminIo): Env | undefined {
  try {
    return loadEnv(io.env);
  } catch (error) {
    if (error instanceof EnvError) {
      io.stderr.write(`${error.message}\n`);
      return undefined;
    }
    throw error;
  }
}

/** A URL safe to print: the password replaced. */
const withoutPassword = (url: string) => url.replace(/^(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/, '$1:***@');

async function backup(file: string, io: AdminIo): Promise<number> {
  const env = environment(io);
  if (!env) return 1;
  if (dialectOf(env.DATABASE_URL) !== 'sqlite') {
    io.stderr.write(
      'DATABASE_URL is PostgreSQL: back it up with pg_dump, e.g.\n' +
        '  pg_dump --format=custom --file=concierge.dump "$DATABASE_URL"\n' +
        'and restore into an empty database with pg_restore --no-owner --dbname=<new-url> concierge.dump (README "Backups").\n',
    );
    return 1;
  }
  const database = await openDatabase(env.DATABASE_URL);
  try {
    await backupSqlite(database, file);
    io.stdout.write(`Backed up ${env.DATABASE_URL.slice('sqlite:'.length)} to ${path.resolve(file)}.\n`);
    return 0;
  } catch (error) {
    io.stderr.write(`Backup failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await database.close();
  }
}

async function copyTo(targetUrl: string, io: AdminIo): Promise<number> {
  const env = environment(io);
  if (!env) return 1;
  if (dialectOf(env.DATABASE_URL) !== 'sqlite') {
    io.stderr.write('copy-to copies from SQLite: DATABASE_URL must be sqlite:<path> (the database to copy).\n');
    return 2;
  }
  if (!/^postgres(ql)?:\/\/.+/.test(targetUrl)) {
    io.stderr.write(`copy-to needs a postgres://user:password@host:5432/database URL, not ${withoutPassword(targetUrl)}\n`);
    return 2;
  }
  const loggers = new Loggers({ level: 'silent' });
  const source = await openDatabase(env.DATABASE_URL);
  let target: Database | undefined;
  try {
    await migrateToLatest(source, loggers.get('db'));
    target = await openDatabase(targetUrl, { schema: io.targetSchema });
    await checkTargetIsNew(source, target);
    io.stdout.write(`Migrating ${withoutPassword(targetUrl)}…\n`);
    await migrateToLatest(target, loggers.get('db'));
    const copies = await copySqliteToPostgres(source, target, ({ table, rows }) => io.stdout.write(`  ${table}: ${rows} rows\n`));
    const total = copies.reduce((sum, copy) => sum + copy.rows, 0);
    io.stdout.write(
      `Copied ${copies.length} tables, ${total} rows; every table's row count matches.\n` +
        `Start the server with DATABASE_URL=${withoutPassword(targetUrl)} (the SQLite file is left as it was).\n`,
    );
    return 0;
  } catch (error) {
    io.stderr.write(`Copy failed, nothing was committed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await target?.close();
    await source.close();
  }
}

async function resetPassword(username: string, io: AdminIo): Promise<number> {
  const env = environment(io);
  if (!env) return 1;

  const password = await readNewPassword(io);
  if (password === undefined) return 1;

  const loggers = new Loggers({ level: 'silent' });
  const database = await openDatabase(env.DATABASE_URL, { schema: io.databaseSchema });
  try {
    await migrateToLatest(database, loggers.get('db'));
    const auth = new AuthService({ database, clock: systemClock, logger: loggers.get('api') });
    const { throttlesCleared } = await auth.resetPassword(username, password);
    io.stdout.write(
      `Password for ${username} changed; their sessions were signed out.\n` +
        `Sign-in limits cleared (${throttlesCleared} per-address, per-account and per-device record${throttlesCleared === 1 ? '' : 's'}): ` +
        'every address and the account may sign in again at once.\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof AppError) {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await database.close();
  }
}

/** Reads and checks the new password; writes the reason and resolves undefined when it is unusable. */
async function readNewPassword(io: AdminIo): Promise<string | undefined> {
  let password: string;
  if (io.stdin.isTTY) {
    password = await askHidden(io, 'New password: ');
    const again = await askHidden(io, 'Repeat new password: ');
    if (password !== again) {
      io.stderr.write("Passwords don't match\n");
      return undefined;
    }
  } else {
    password = await firstLine(io.stdin);
  }
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    io.stderr.write(`Password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters\n`);
    return undefined;
  }
  return password;
}

async function firstLine(input: Readable): Promise<string> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

/** Prompts on the terminal without echoing what is typed (raw mode; Enter ends, Ctrl-C aborts). */
function askHidden(io: AdminIo, prompt: string): Promise<string> {
  const input = io.stdin as NodeJS.ReadStream;
  io.stdout.write(prompt);
  return new Promise((resolve, reject) => {
    let answer = '';
    const finish = (error?: Error) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      io.stdout.write('\n');
      if (error) reject(error);
      else resolve(answer);
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n') return finish();
        if (char === '\u0003') return finish(new Error('cancelled'));
        if (char === '\u007f' || char === '\b') answer = answer.slice(0, -1);
        else answer += char;
      }
    };
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}

if (import.meta.main) {
  runAdmin(process.argv.slice(2), { env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr }).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
