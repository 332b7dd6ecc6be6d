import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../db/database.ts';
import { startFakeDiscord, type FakeDiscord } from '../test-support/fake-discord/fake-discord.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../test-support/fake-openai/fake-openai.ts';
import { createProcessDatabase, ServerProcess } from '../test-support/server-process.ts';
import { testDatabaseKind } from '../test-support/test-context.ts';

/** PostgreSQL waits for the dead process's leases (answer and gateway) to run out: at most ~20 s. */
const BUDGET_MS = 90_000;
const ANSWER = 'The lost and found is at the registration desk in the lobby.';

/**
 * kill -9 while an /ask is being answered, then a restart on the same
 * database: the new process resumes the command from its stored run and
 * delivers the answer through the interaction's stored token, and takes
 * the gateway over.
 */
describe('the Discord bot across a crash', () => {
  let discord: FakeDiscord;
  let openai: FakeOpenAI;
  let databaseUrl: string;
  let database: Database | undefined;
  let cleanup: () => Promise<void>;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    discord = await startFakeDiscord();
    openai = await startFakeOpenAI({ knobs: { runDurationMs: 4000, answer: () => ANSWER } });
    ({ url: databaseUrl, drop: cleanup } = await createProcessDatabase());
  });

  afterAll(async () => {
    for (const server of servers) server.kill('SIGKILL');
    await database?.close();
    await cleanup?.();
    await discord?.close();
    await openai?.close();
  });

  it(
    'resumes an /ask interrupted mid-answer and delivers it through the stored token',
    async () => {
      const env = {
        DATABASE_URL: databaseUrl,
        OPENAI_API_KEY: openai.apiKey,
        OPENAI_BASE_URL: openai.url,
        DISCORD_TOKEN: discord.token,
        DISCORD_APPLICATION_ID: discord.applicationId,
        DISCORD_API_URL: discord.apiUrl,
      };
      const first = await ServerProcess.start('first', env);
      servers.push(first);
      await discord.waitForReady(15_000);
      await expect.poll(() => discord.commands.length, { timeout: 10_000 }).toBe(3);
      database = await openDatabase(databaseUrl);
      const db = database.db;

      const alice = discord.user('alice');
      const interaction = discord.slashCommand({ command: 'ask', options: { question: 'Where is the lost and found?' }, user: alice });
      await expect.poll(() => interaction.callback?.type ?? null, { timeout: 5000 }).toBe(5);
      await expect
        .poll(async () => (await db.selectFrom('ask_commands').select('run_id').where('interaction_id', '=', interaction.id).executeTakeFirst())?.run_id ?? null, { timeout: 15_000 })
        .toMatch(/^resp_/);
      await first.crash();
      expect(interaction.original).toMatchObject({ loading: true });
      // The next process reads a short poll interval (what an operator would set on the Config screen).
      await db.updateTable('runtime_config').set({ assistant_poll_interval: '200ms', assistant_max_poll_interval: '500ms' }).execute();

      const restartedAt = Date.now();
      const second = await ServerProcess.start('second', env);
      servers.push(second);
      // The answer reaches the asker through the webhook: no gateway needed, so it does not wait for the gateway's lease.
      await expect.poll(() => interaction.original?.loading === false, { timeout: testDatabaseKind() === 'postgres' ? 35_000 : 15_000, interval: 200 }).toBe(true);
      console.log(`Discord crash recovery (${testDatabaseKind()}): the answer reached Discord ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
      expect(interaction.original!.content).toContain(ANSWER);
      expect(interaction.original!.content).toContain('-# 9 of 10 questions left in the next 6 h');

      await expect
        .poll(() => db.selectFrom('ask_commands').selectAll().where('interaction_id', '=', interaction.id).executeTakeFirstOrThrow(), { timeout: 5000 })
        .toMatchObject({ state: 'completed', attempts: 2, owner: null, step: 'feedback_open', discord_message_id: interaction.original!.id });
      // Resumed from its stored run: one run at the provider.
      expect(openai.journal.filter((entry) => entry.method === 'POST' && entry.path === '/v1/responses')).toHaveLength(1);

      // The new process holds the gateway (at once on SQLite; once the dead one's lease ran out on PostgreSQL).
      await expect.poll(() => discord.connected, { timeout: 30_000, interval: 200 }).toBe(1);
      expect(discord.identifies).toBe(2);
      await expect.poll(async () => (await fetch(`${second.origin}/healthz`).then((reply) => reply.json()) as { discord_gateway_connected: boolean }).discord_gateway_connected).toBe(true);
    },
    BUDGET_MS,
  );
});
