import type { ConfigPatch } from '@concierge/contract';
import { expect } from 'vitest';
import { realDeadline, realSleep, type Clock } from '../clock.ts';
import { startFakeDiscord, type FakeChannel, type FakeDiscord, type FakeInteraction, type FakeMessage, type FakeUser } from './fake-discord/fake-discord.ts';
import { startFakeOpenAI, type FakeOpenAI, type Knobs } from './fake-openai/fake-openai.ts';
import { createTestContext, signIn, uploadKnowledge, type TestContext } from './test-context.ts';

/**
 * Real time moved forward on demand: the server under test and the fake
 * Discord share it, so "15 minutes later" (token expiry) or "6 hours later"
 * (limits) is one call, while everything else (discord.js, timers) runs in
 * real time.
 */
export function offsetClock() {
  let offset = 0;
  const now = () => Date.now() + offset;
  const clock: Clock = { now: () => new Date(now()), sleep: realSleep, deadline: realDeadline };
  return {
    clock,
    now,
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** What the assistant knows in these tests (the fake OpenAI quotes its matching lines, with citations). */
export const CONVENTION_NOTES = `# Practical information

The lost and found is at the registration desk in the lobby, open 8:00 to 20:00.

Cosplay repair station: Room 112, with glue guns, safety pins and thread.

The costume contest is on Saturday at 19:00 on the Main Stage.`;

export interface DiscordHarness {
  ctx: TestContext;
  discord: FakeDiscord;
  openai: FakeOpenAI;
  time: ReturnType<typeof offsetClock>;
  admin: string;
  /** A signed-in admin's request to the API. */
  api(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<{ statusCode: number; json: () => any }>;
  configure(patch: ConfigPatch): Promise<void>;
  ask(user: FakeUser, question: string, options?: { whisper?: boolean; channel?: FakeChannel; roles?: string[] }): FakeInteraction;
  /** Waits until the interaction's answer stops "thinking" and returns every message it produced (first the original). */
  answerOf(interaction: FakeInteraction, options?: { parts?: number }): Promise<FakeMessage[]>;
  /** The stored ask command of an interaction. */
  command(interaction: FakeInteraction): Promise<Record<string, any>>;
  /** The ask command once the bot has recorded the answer's delivery (its message id). */
  delivered(interaction: FakeInteraction): Promise<Record<string, any>>;
  /** What the notification channel shows. */
  notifications(): string[];
  close(): Promise<void>;
}

/**
 * The whole product on a fresh database (SQLite or PostgreSQL, as the suite
 * runs), answering through the fake OpenAI, with the real discord.js bot
 * connected to a fake Discord: everything a Discord user would touch is
 * real except Discord itself.
 */
export async function startDiscordHarness(
  options: { openai?: Partial<Knobs>; config?: ConfigPatch; startWorker?: boolean; startBot?: boolean; database?: { url: string; schema?: string }; env?: Record<string, string> } = {},
): Promise<DiscordHarness> {
  const time = offsetClock();
  const discord = await startFakeDiscord({ now: time.now });
  const openai = await startFakeOpenAI({ knobs: { runDurationMs: 50, ...options.openai } });
  const ctx = await createTestContext({
    clock: time.clock,
    database: options.database,
    env: { DISCORD_TOKEN: discord.token, DISCORD_APPLICATION_ID: discord.applicationId, DISCORD_API_URL: discord.apiUrl, OPENAI_API_KEY: openai.apiKey, OPENAI_BASE_URL: openai.url, ...options.env },
  });
  const admin = await signIn(ctx.app);
  const api: DiscordHarness['api'] = async (method, url, payload) => {
    const reply = await ctx.app.inject({ method, url, payload: payload as never, headers: { cookie: admin } });
    return { statusCode: reply.statusCode, json: () => reply.json() };
  };
  const configure = async (patch: ConfigPatch) => {
    const reply = await api('PATCH', '/api/config', patch);
    if (reply.statusCode !== 200) throw new Error(`config update failed: ${JSON.stringify(reply.json())}`);
  };
  if (options.database === undefined) {
    const uploaded = await uploadKnowledge(ctx.app, admin, 'convention-notes.md', CONVENTION_NOTES);
    if (uploaded.statusCode !== 200) throw new Error(`knowledge upload failed: ${uploaded.body}`);
  }
  await configure({
    assistant_poll_interval: '100ms',
    assistant_max_poll_interval: '200ms',
    discord_notification_channel_id: discord.channels.notifications.id,
    donated_role_id: discord.guild.roles.donor,
    ...options.config,
  });
  if (options.startBot ?? true) {
    ctx.deps.discord.start();
    await discord.waitForReady();
    await expect.poll(() => ctx.deps.discord.connected, { timeout: 10_000 }).toBe(true);
    await expect.poll(() => discord.commands.length, { timeout: 10_000 }).toBe(3);
  }
  if (options.startWorker ?? true) ctx.deps.askWorker.start();
  const command = (interaction: FakeInteraction) =>
    ctx.deps.database.db.selectFrom('ask_commands').selectAll().where('interaction_id', '=', interaction.id).executeTakeFirstOrThrow();

  return {
    ctx,
    discord,
    openai,
    time,
    admin,
    api,
    configure,
    ask(user, question, askOptions = {}) {
      return discord.slashCommand({ command: askOptions.whisper ? 'whisper' : 'ask', options: { question }, user, channel: askOptions.channel, roles: askOptions.roles });
    },
    async answerOf(interaction, answerOptions = {}) {
      await expect
        .poll(() => interaction.original !== null && !interaction.original.loading && interaction.followUps.length + 1 >= (answerOptions.parts ?? 1), { timeout: 15_000, interval: 50 })
        .toBe(true);
      return [interaction.original!, ...interaction.followUps];
    },
    command,
    async delivered(interaction) {
      await expect.poll(async () => (await command(interaction).catch(() => null))?.discord_message_id ?? null, { timeout: 5000, interval: 20 }).not.toBeNull();
      return command(interaction);
    },
    notifications() {
      return discord.messages(discord.channels.notifications).map((message) => message.content);
    },
    async close() {
      // The bot and the worker stop while their database is still there (a PostgreSQL suite drops its schema on close).
      await ctx.deps.discord.stop();
      await ctx.deps.askWorker.stop();
      await ctx.close();
      await discord.close();
      await openai.close();
    },
  };
}

/** The labels of a message's buttons, in order. */
export const buttonLabels = (message: FakeMessage): string[] =>
  message.components.flatMap((row) => ((row as { components?: { label?: string }[] }).components ?? []).map((button) => button.label ?? ''));
