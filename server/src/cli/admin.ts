/**
 * Operator commands run from the server's shell:
 *
 *   npm run admin -- reset-password <username>
 *
 * The new password is asked for twice on a terminal (not echoed), or read
 * from the first line of standard input when it is piped
 * (`printf 'new password\n' | npm run admin -- reset-password alice`).
 * Admin accounts are otherwise only created through first-time setup, so this
 * is the way back in for an operator who lost the password.
 */
import { PASSWORD_MAX, PASSWORD_MIN } from '@concierge/contract';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { AuthService } from '../auth/auth.service.ts';
import { systemClock } from '../clock.ts';
import { EnvError, loadEnv } from '../config/env.ts';
import { openDatabase } from '../db/database.ts';
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
}

const USAGE = `Usage: npm run admin -- reset-password <username>

Commands:
  reset-password <username>   Set a new password for an admin and sign out all of their sessions.
`;

/** Runs one admin command; resolves to the process exit code. */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'reset-password' && rest.length === 1) return resetPassword(rest[0]!, io);
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  io.stderr.write(`Unknown command or wrong arguments: ${argv.join(' ')}\n\n${USAGE}`);
  return 2;
}

async function resetPassword(username: string, io: AdminIo): Promise<number> {
  let env;
  try {
    env = loadEnv(io.env);
  } catch (error) {
    if (error instanceof EnvError) {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }

  const password = await readNewPassword(io);
  if (password === undefined) return 1;

  const loggers = new Loggers({ level: 'silent' });
  const database = await openDatabase(env.DATABASE_URL, { schema: io.databaseSchema });
  try {
    await migrateToLatest(database, loggers.get('db'));
    const auth = new AuthService({ database, clock: systemClock, logger: loggers.get('api') });
    await auth.resetPassword(username, password);
    io.stdout.write(`Password for ${username} changed; their sessions were signed out.\n`);
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
