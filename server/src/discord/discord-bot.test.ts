import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_LOG_TABLE } from '../db/schema/assistant.ts';
import { buttonLabels, startDiscordHarness, type DiscordHarness } from '../test-support/discord-harness.ts';
import { startFixtureServer } from '../test-support/fixture-server.ts';
import { createTestContext, signIn } from '../test-support/test-context.ts';
import { startFakeDiscord, type FakeInteraction, type FakeUser } from '../test-support/fake-discord/fake-discord.ts';
import { DELIVERY_TEXTS } from './delivery.ts';
import { DiscordBot, GATEWAY_REASONS } from './discord-bot.ts';
import { BOT_TEXTS } from './interactions.ts';

/** Every end-to-end test's budget: the suite stays fast (no 15 s waits for guilds, no real 15 minutes). */
const BUDGET_MS = 25_000;
const EPHEMERAL = 64;

describe('the Discord bot, end to end through discord.js and a fake Discord', () => {
  let h: DiscordHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it(
    'answers /ask in public: deferred within 3 s, the answer with its sources, the usage footer and feedback buttons; every record complete',
    async () => {
      h = await startDiscordHarness();
      const alice = h.discord.user('alice');
      const interaction = h.ask(alice, 'Where is the lost and found?', { roles: [h.discord.guild.roles.donor] });
      const [answer, ...more] = await h.answerOf(interaction);
      const answeredAt = h.time.now();

      expect(interaction.callback).toMatchObject({ type: 5 });
      expect(interaction.callback!.at - interaction.created_at).toBeLessThan(3000);
      console.log(`/ask (${process.env.TEST_DB ?? 'sqlite'}): deferred ${interaction.callback!.at - interaction.created_at} ms after the interaction, answer seen ${answeredAt - interaction.created_at} ms after it`);
      expect(more).toEqual([]);
      expect(answer!.ephemeral).toBe(false);
      expect(answer!.content).toContain('registration desk in the lobby');
      expect(answer!.content).toContain('\n\n-# Sources: Convention notes\n\n');
      expect(answer!.content.endsWith('-# 9 of 10 questions left in the next 6 h')).toBe(true);
      expect(buttonLabels(answer!)).toEqual(['Good (0)', 'Outdated (0)', 'Incorrect (0)', 'Other (0)']);

      const command = await h.delivered(interaction);
      expect(command).toMatchObject({
        state: 'completed',
        step: 'feedback_open',
        type: 'ask',
        whisper: false,
        acknowledged: true,
        attempts: 1,
        run_status: 'completed',
        error: null,
        owner: null,
        user_id: alice.id,
        guild_id: h.discord.guild.id,
        channel_id: h.discord.channels.general.id,
        application_id: h.discord.applicationId,
        context: 'guild',
        discord_message_id: answer!.id,
        show_good: true,
        show_undo: false,
        prompt: 'Where is the lost and found?',
      });
      expect(command.response).toContain('registration desk in the lobby');
      expect(Date.parse(command.token_expires)).toBe(interaction.created_at + 15 * 60_000);
      expect(command.total_tokens).toBeGreaterThan(0);
      expect(command.prompt_tokens + command.completion_tokens).toBe(command.total_tokens);
      expect(command.thread_id).toMatch(/^conv_/);
      expect(command.run_id).toMatch(/^resp_/);
      for (const step of ['create_thread', 'create_message', 'create_run', 'retrieve_run', 'list_messages'] as const) {
        const logs = await h.ctx.deps.database.db.selectFrom(PROVIDER_LOG_TABLE[step]).selectAll().where('ask_command_id', '=', command.id).execute();
        expect(logs.length, step).toBeGreaterThan(0);
        expect(logs.every((log) => log.error === null && log.request_ended !== null), step).toBe(true);
      }

      // The user, created on first sight, a donor by the role; tokens counted for them and on Status.
      const user = (await h.api('GET', `/api/user/${alice.id}/history`)).json();
      expect(user[0]).toMatchObject({ ask_command_id: command.id, username: 'alice', global_name: 'Alice', state: 'completed', whisper: false });
      const users = (await h.api('GET', '/api/users')).json();
      expect(users).toEqual([expect.objectContaining({ id: alice.id, username: 'alice', global_name: 'Alice', donated: true, billable_6h: 1 })]);
      expect(users[0].stats.ask_command_usage['6h'].total_tokens).toBe(command.total_tokens);
      const status = (await h.api('GET', '/api/status')).json();
      expect(status.discord).toMatchObject({ configured: true, connected: true, state: 'connected', connects: 1, disconnects: 0, messages_handled: 1, reason: null });
      expect(status.openai.total_tokens).toBe(command.total_tokens);
      expect(status.users_seen).toBe(1);
      expect((await h.api('GET', '/healthz')).json()).toEqual({ paused: false, queue_size: 0, discord_gateway_connected: true });

      // The operator hears about the connection and the new user.
      await expect.poll(() => h!.notifications().length).toBe(2);
      expect(h.notifications()).toEqual(
        expect.arrayContaining([expect.stringContaining('is connected to Discord'), expect.stringMatching(/^👋 New user: \*\*Alice\*\* \(alice, <@\d+>\)$/)]),
      );
    },
    BUDGET_MS,
  );

  /** Waits for the bot's acknowledgement of an interaction. */
  const acknowledged = async (interaction: FakeInteraction) => {
    await expect.poll(() => interaction.callback !== null, { timeout: 5000, interval: 20 }).toBe(true);
    return interaction.callback!;
  };
  /** A refusal the bot sends privately after a public deferral: the deferral goes, an ephemeral follow-up says why. */
  const privateRefusal = async (interaction: FakeInteraction) => {
    await expect.poll(() => interaction.followUps.length, { timeout: 5000, interval: 20 }).toBe(1);
    expect(interaction.original?.deleted).toBe(true);
    expect(interaction.followUps[0]!.ephemeral).toBe(true);
    return interaction.followUps[0]!.content;
  };
  const statusOf = async () => (await h!.api('GET', '/api/status')).json();
  /** Waits until the bot has stored the interaction's ask command (with ack_early the deferral comes first). */
  const stored = async (interaction: FakeInteraction) => {
    await expect.poll(async () => (await h!.command(interaction).catch(() => null))?.state ?? null, { timeout: 5000, interval: 20 }).not.toBeNull();
  };

  it(
    'answers /whisper privately: a 2,600-character answer in parts, every part ephemeral, nothing cut, and nothing of it in the notification channel',
    async () => {
      const paragraphs = Array.from({ length: 6 }, (_, i) => `Part ${i + 1} of the badge desk guide. ${'The badge pickup desk in Hall A opens at 8:00 on Saturday. '.repeat(7).trim()}`);
      const longAnswer = paragraphs.join('\n\n');
      expect(longAnswer.length).toBeGreaterThanOrEqual(2600);
      h = await startDiscordHarness({ openai: { answer: () => longAnswer } });
      const alice = h.discord.user('alice');
      const interaction = h.ask(alice, 'Tell me everything about the secret badge desk', { whisper: true });
      const parts = await h.answerOf(interaction, { parts: 2 });

      expect(interaction.callback).toMatchObject({ type: 5, data: { flags: EPHEMERAL } });
      expect(parts).toHaveLength(2);
      for (const part of parts) {
        expect(part.ephemeral).toBe(true);
        expect(part.content.length).toBeLessThanOrEqual(2000);
      }
      // Split at a paragraph break, never inside one; nothing lost.
      expect(parts.map((part) => part.content).join('\n\n')).toBe(`${longAnswer}\n\n-# 9 of 10 questions left in the next 6 h`);
      expect(buttonLabels(parts[0]!)).toEqual([]);
      expect(buttonLabels(parts[1]!)).toEqual(['Good (0)', 'Outdated (0)', 'Incorrect (0)', 'Other (0)']);
      expect(h.discord.messages(h.discord.channels.general).filter((message) => !message.ephemeral)).toEqual([]);
      expect(await h.delivered(interaction)).toMatchObject({ state: 'completed', type: 'whisper', whisper: true, step: 'feedback_open' });
      // Only the asker sees a whisper, so the kind they voted is greyed out for them.
      const { id } = await h.command(interaction);
      expect(() => h!.discord.click(parts[1]!, `fb:good:${id}`, h!.discord.user('bob'))).toThrow(/only the asker/);
      const vote = h.discord.click(parts[1]!, `fb:good:${id}`, alice);
      expect((await acknowledged(vote)).type).toBe(7);
      expect(buttonLabels(parts[1]!)).toEqual(['Good (1)', 'Outdated (0)', 'Incorrect (0)', 'Other (0)', 'Undo']);
      expect(() => h!.discord.click(parts[1]!, `fb:good:${id}`, alice)).toThrow(/disabled/);
      await expect.poll(() => h!.command(interaction)).toMatchObject({ disable_good: true, disable_outdated: false, show_undo: true });

      // A whisper that fails: the asker is told privately; the operator hears of the failure, never of the question.
      h.openai.configure({ finalStatus: 'failed' });
      const failing = h.ask(alice, 'Is the secret badge desk haunted?', { whisper: true });
      const [failed] = await h.answerOf(failing);
      expect(failed).toMatchObject({ ephemeral: true, content: h.ctx.deps.config.get().discord_error_message });
      expect((await h.command(failing)).state).toBe('failed');
      await expect.poll(() => h!.notifications().some((text) => text.startsWith('⚠️ /whisper by'))).toBe(true);
      const notifications = h.notifications().join('\n');
      expect(notifications).not.toMatch(/secret|haunted|badge/i);
      expect(notifications).toContain(`(ask command ${(await h.command(failing)).id})`);
    },
    BUDGET_MS,
  );

  it(
    'takes feedback: buttons with counts, one vote per user and type, the Other form with the configured texts, Undo within feedback_max_undo; shown in the history',
    async () => {
      h = await startDiscordHarness({ config: { feedback_modal_title: 'What went wrong?', feedback_modal_placeholder: 'e.g. the room changed', feedback_modal_min_length: 10 } });
      const [alice, bob, carol] = ['alice', 'bob', 'carol'].map((name) => h!.discord.user(name)) as [FakeUser, FakeUser, FakeUser];
      const asked = h.ask(alice, 'When is the costume contest?');
      const [answer] = await h.answerOf(asked);
      const { id } = await h.delivered(asked);
      const click = async (user: FakeUser, customId: string) => {
        const interaction = h!.discord.click(answer!, customId, user);
        return { interaction, callback: await acknowledged(interaction) };
      };

      expect((await click(bob, `fb:good:${id}`)).callback.type).toBe(7);
      expect(buttonLabels(answer!)).toEqual(['Good (1)', 'Outdated (0)', 'Incorrect (0)', 'Other (0)', 'Undo']);
      const again = await click(bob, `fb:good:${id}`);
      expect(again.callback).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: BOT_TEXTS.alreadyVoted('Good') } });
      await click(carol, `fb:hallucinated:${id}`);
      expect(buttonLabels(answer!)).toEqual(['Good (1)', 'Outdated (0)', 'Incorrect (1)', 'Other (0)', 'Undo']);

      const other = await click(bob, `fb:other:${id}`);
      expect(other.callback.type).toBe(9);
      expect(other.interaction.modal).toMatchObject({
        custom_id: `fbm:other:${id}`,
        title: 'What went wrong?',
        components: [{ type: 18, label: 'What was wrong?', component: { custom_id: 'description', placeholder: 'e.g. the room changed', min_length: 10, max_length: 2000 } }],
      });
      expect(() => h!.discord.submitModal(other.interaction, { description: 'too short' })).toThrow(/shorter than 10/);
      const submitted = h.discord.submitModal(other.interaction, { description: 'The contest moved to Hall C' });
      expect((await acknowledged(submitted)).type).toBe(7);
      expect(buttonLabels(answer!)).toEqual(['Good (1)', 'Outdated (0)', 'Incorrect (1)', 'Other (1)', 'Undo']);

      // Undo takes back bob's latest vote (Other), once: feedback_max_undo is 1.
      await click(bob, `fb:undo:${id}`);
      expect(buttonLabels(answer!)).toEqual(['Good (1)', 'Outdated (0)', 'Incorrect (1)', 'Other (0)', 'Undo']);
      expect((await click(bob, `fb:undo:${id}`)).callback).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: BOT_TEXTS.undoLimit(1) } });
      expect((await click(alice, `fb:undo:${id}`)).callback).toMatchObject({ type: 4, data: { content: BOT_TEXTS.nothingToUndo } });

      const history = (await h.api('GET', `/api/user/${alice.id}/history?include_reports=true`)).json();
      expect(history[0]).toMatchObject({ ask_command_id: id, feedback: { good: 1, hallucinated: 1 } });
      expect(history[0].reports.map((report: { user_id: string; type: string }) => `${report.user_id}:${report.type}`).sort()).toEqual([`${bob.id}:good`, `${carol.id}:hallucinated`].sort());
      expect((await statusOf()).reports).toEqual({ good: 1, hallucinated: 1 });
      await expect.poll(() => h!.command(asked)).toMatchObject({ custom_id: `fb:undo:${id}`, show_undo: true, step: 'feedback_open' });
      await expect.poll(() => h!.notifications().filter((text) => text.startsWith('📝'))).toEqual([
        expect.stringContaining(`marked an /ask answer (ask command ${id}) as **Incorrect**`),
        expect.stringContaining('as **Other**: “The contest moved to Hall C”'),
      ]);
      // Every click was handled and counted.
      expect((await statusOf()).discord.messages_handled).toBe(9);
    },
    BUDGET_MS,
  );

  it(
    'holds a user to the 6 h limit: a private refusal with when they can ask again, the operator told, and a question again 6 hours later',
    async () => {
      h = await startDiscordHarness({ config: { user_ask_command_limit_6h: 2, donation_url: 'https://example.org/donate' } });
      const alice = h.discord.user('alice');
      await h.answerOf(h.ask(alice, 'Where is the lost and found?'));
      const [second] = await h.answerOf(h.ask(alice, 'Where is the cosplay repair station?'));
      expect(second!.content).toContain('-# 0 of 2 questions left in the next 6 h');

      const refused = h.ask(alice, 'When is the costume contest?');
      const refusal = await privateRefusal(refused);
      expect(refusal).toMatch(/^You have asked 2 questions in the last 6 hours, the most allowed\. You can ask again at \w{3} \d+ \w{3}, \d\d:\d\d \w+\.\nEnjoying the concierge\? Support it: https:\/\/example\.org\/donate$/);
      expect(await h.command(refused)).toMatchObject({ state: 'rate_limited' });
      await expect.poll(() => h!.notifications().some((text) => /^⏳ \*\*Alice\*\* \(alice, <@\d+>\) reached the limit of 2 questions in 6 h\. They can ask again at/.test(text))).toBe(true);
      expect(h.discord.messages(h.discord.channels.general).filter((message) => !message.ephemeral)).toHaveLength(2);

      h.time.advance(6 * 3_600_000 + 1000);
      const [later] = await h.answerOf(h.ask(alice, 'When is the costume contest?'));
      expect(later!.content).toContain('Saturday at 19:00 on the Main Stage');
    },
    BUDGET_MS,
  );

  it(
    'while paused shows Do Not Disturb, answers a priority user and tells a normal user privately',
    async () => {
      h = await startDiscordHarness();
      const [vip, alice] = [h.discord.user('vip'), h.discord.user('alice')];
      await h.answerOf(h.ask(vip, 'Where is the lost and found?'));
      expect((await h.api('PATCH', `/api/user/${vip.id}`, { priority: true })).statusCode).toBe(200);

      expect((await h.api('POST', '/api/pause')).statusCode).toBe(200);
      await expect.poll(() => h!.discord.presence?.status).toBe('dnd');
      const normal = h.ask(alice, 'Where is the cosplay repair station?');
      expect(await privateRefusal(normal)).toBe('The chat service is currently unavailable. Please try again later.');
      expect(await h.command(normal)).toMatchObject({ state: 'aborted' });

      const priority = h.ask(vip, 'Where is the cosplay repair station?');
      const [answer] = await h.answerOf(priority);
      expect(answer!.content).toContain('Room 112');
      expect(await h.command(priority)).toMatchObject({ state: 'completed', priority: true });

      expect((await h.api('POST', '/api/resume')).statusCode).toBe(200);
      await expect.poll(() => h!.discord.presence?.status).toBe('online');
    },
    BUDGET_MS,
  );

  it(
    'shows Do Not Disturb while the spent token budget pauses it, online again once the budget is raised or the day ends',
    async () => {
      h = await startDiscordHarness();
      const alice = h.discord.user('alice');
      await expect.poll(() => h!.discord.presence?.status).toBe('online');
      await h.configure({ daily_token_budget: 1, token_budget_action: 'pause' });
      // The answer that spends the day's budget is delivered; then the bot shows it is not answering.
      await h.answerOf(h.ask(alice, 'Where is the lost and found?'));
      await expect.poll(() => h!.discord.presence).toMatchObject({ status: 'dnd', activities: [{ state: '/ask me about the con!' }] });
      expect(h.ctx.deps.config.get().paused).toBe(false);
      const refused = h.ask(alice, 'Where is the cosplay repair station?');
      expect(await privateRefusal(refused)).toBe('The chat service is currently unavailable. Please try again later.');

      // Raising the budget resumes it at once; lowering it again pauses it again.
      await h.configure({ daily_token_budget: 1_000_000 });
      await expect.poll(() => h!.discord.presence?.status).toBe('online');
      await h.configure({ daily_token_budget: 1 });
      await expect.poll(() => h!.discord.presence?.status).toBe('dnd');
      // The next convention day starts with a fresh budget: online within the bot's next look (5 s), with no event to say so.
      h.time.advance(24 * 3_600_000);
      await expect.poll(() => h!.discord.presence?.status, { timeout: 8000 }).toBe('online');
    },
    BUDGET_MS,
  );

  it(
    'keeps one question in flight per user: a second is refused with discord_rate_limit_message while the first is answered',
    async () => {
      h = await startDiscordHarness({ openai: { runDurationMs: 1500 } });
      const alice = h.discord.user('alice');
      const first = h.ask(alice, 'Where is the lost and found?');
      await expect.poll(async () => (await h!.command(first).catch(() => null))?.state, { timeout: 5000, interval: 20 }).toBe('in_progress');
      const second = h.ask(alice, 'Where is the cosplay repair station?');
      expect(await privateRefusal(second)).toBe("I'm still working on your last question!");
      expect(await h.command(second)).toMatchObject({ state: 'rate_limited' });
      const [answer] = await h.answerOf(first);
      expect(answer!.content).toContain('registration desk');
      // Another user is not held up by alice's question.
      const bob = h.discord.user('bob');
      await h.answerOf(h.ask(bob, 'Where is the cosplay repair station?'));
    },
    BUDGET_MS,
  );

  it(
    'expires a question whose token runs out: told while the token still works, never a run within 2 minutes of its end, silence after',
    async () => {
      h = await startDiscordHarness({ startWorker: false });
      const [alice, bob] = [h.discord.user('alice'), h.discord.user('bob')];
      const late = h.ask(alice, 'Where is the lost and found?');
      await acknowledged(late);
      await stored(late);
      h.time.advance(14 * 60_000);
      await h.ctx.deps.askWorker.drain();
      expect(await h.command(late)).toMatchObject({ state: 'expired', run_id: null });
      expect(late.original).toMatchObject({ loading: false, content: DELIVERY_TEXTS.expired });

      const gone = h.ask(bob, 'Where is the cosplay repair station?');
      await acknowledged(gone);
      await stored(gone);
      h.time.advance(16 * 60_000);
      await h.ctx.deps.askWorker.drain();
      expect(await h.command(gone)).toMatchObject({ state: 'expired', run_id: null });
      // Discord refuses the dead token (50027); the bot logs it and moves on.
      expect(h.discord.requests.filter((entry) => entry.code === 50027)).toHaveLength(1);
      expect(gone.original!.loading).toBe(true);
      const runs = await h.ctx.deps.database.db.selectFrom('openai_create_run_logs').selectAll().where('ask_command_id', 'is not', null).execute();
      expect(runs).toEqual([]);
    },
    BUDGET_MS,
  );

  it(
    'reconnects after the gateway drops (close 4000, op 7): the session resumed, counters in the database, and it answers after',
    async () => {
      h = await startDiscordHarness();
      const session = h.discord.sessions[0]!;
      h.discord.disconnect(4000);
      await expect.poll(() => session.resumes, { timeout: 10_000 }).toBe(1);
      await expect.poll(async () => (await statusOf()).discord).toMatchObject({ connected: true, connects: 2, disconnects: 1 });
      h.discord.requestReconnect();
      await expect.poll(() => session.resumes, { timeout: 10_000 }).toBe(2);
      await expect.poll(async () => (await statusOf()).discord).toMatchObject({ connected: true, state: 'connected', connects: 3, disconnects: 2 });
      expect(h.discord.identifies).toBe(1);
      expect((await h.api('GET', '/healthz')).json().discord_gateway_connected).toBe(true);
      const [answer] = await h.answerOf(h.ask(h.discord.user('alice'), 'Where is the lost and found?'));
      expect(answer!.content).toContain('registration desk');
      // Resumes are routine: the operator hears of the first connection only.
      expect(h.notifications().filter((text) => text.includes('is connected to Discord'))).toHaveLength(1);
    },
    BUDGET_MS,
  );

  it(
    'follows the configuration at once: the custom status, Do Not Disturb while paused, the commands\' texts re-registered',
    async () => {
      h = await startDiscordHarness();
      await expect.poll(() => h!.discord.presence).toMatchObject({ via: 'update', status: 'online', activities: [{ type: 4, state: '/ask me about the con!' }] });
      await h.configure({ discord_custom_status: 'Ask me about the panels' });
      await expect.poll(() => h!.discord.presence).toMatchObject({ status: 'online', activities: [{ type: 4, state: 'Ask me about the panels' }] });
      await h.configure({ paused: true });
      await expect.poll(() => h!.discord.presence).toMatchObject({ status: 'dnd', activities: [{ state: 'Ask me about the panels' }] });
      await h.configure({ paused: false, discord_custom_status: '' });
      await expect.poll(() => h!.discord.presence).toMatchObject({ status: 'online', activities: [] });

      await h.configure({ ask_command_description: 'Ask the con concierge anything', ask_command_max_length: 300 });
      await expect.poll(() => h!.discord.commands.find((command) => command.name === 'ask')).toMatchObject({
        description: 'Ask the con concierge anything',
        options: [{ name: 'question', min_length: 1, max_length: 300 }],
      });
      expect(() => h!.ask(h!.discord.user('alice'), 'x'.repeat(301))).toThrow(/longer than 300/);
    },
    BUDGET_MS,
  );

  it(
    'answers only in the allowed channels (and their threads), with a polite private refusal elsewhere',
    async () => {
      h = await startDiscordHarness();
      const { general, lounge, thread } = h.discord.channels;
      expect((await h.api('PATCH', '/api/config', { discord_allowed_channel_ids: 'lounge' })).json()).toMatchObject({ code: 'validation_error', error: expect.stringContaining('discord_allowed_channel_ids') });
      await h.configure({ discord_allowed_channel_ids: `${lounge.id}\n${general.id}` });
      expect(h.ctx.deps.config.get().discord_allowed_channel_ids).toBe(`${lounge.id}, ${general.id}`);
      await h.configure({ discord_allowed_channel_ids: lounge.id });
      const alice = h.discord.user('alice');

      const elsewhere = h.ask(alice, 'Where is the lost and found?', { channel: general });
      expect(await acknowledged(elsewhere)).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: BOT_TEXTS.wrongChannel([lounge.id]) } });
      expect(await h.ctx.deps.database.db.selectFrom('ask_commands').selectAll().execute()).toEqual([]);
      const inThread = h.ask(alice, 'Where is the lost and found?', { channel: thread });
      expect((await acknowledged(inThread)).type).toBe(4);

      const [answer] = await h.answerOf(h.ask(alice, 'Where is the lost and found?', { channel: lounge }));
      expect(answer).toMatchObject({ channel_id: lounge.id, ephemeral: false });
      // A direct message is no channel of the guild: answered there, privately by nature.
      const dm = h.discord.dmChannel(alice);
      const [inDm] = await h.answerOf(h.ask(alice, 'Where is the lost and found?', { channel: dm }));
      expect(inDm).toMatchObject({ channel_id: dm.id });
      expect(inDm!.content).toContain('registration desk');
      await h.configure({ discord_allowed_channel_ids: general.id });
      await h.answerOf(h.ask(alice, 'Where is the cosplay repair station?', { channel: thread }));
    },
    BUDGET_MS,
  );

  it(
    'starts a new conversation on /forget, answers and listens in DMs, stores mentions and replies to the bot, and gives ignored users nothing',
    async () => {
      h = await startDiscordHarness();
      const [alice, troll] = [h.discord.user('alice'), h.discord.user('troll')];
      const asked = h.ask(alice, 'Where is the lost and found?');
      const [answer] = await h.answerOf(asked);
      const thread = (await h.command(asked)).thread_id;

      const forget = h.discord.slashCommand({ command: 'forget', user: alice });
      expect(await acknowledged(forget)).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: BOT_TEXTS.forgot } });
      const next = h.ask(alice, 'Where is the cosplay repair station?');
      await h.answerOf(next);
      expect((await h.command(next)).thread_id).not.toBe(thread);
      expect((await h.api('GET', '/api/users')).json()[0].stats.forget_commands).toBe(1);

      const mention = h.discord.post({ user: troll, content: 'are you a robot?', mentionBot: true });
      const reply = h.discord.post({ user: alice, content: 'thanks, found it!', replyTo: answer! });
      h.discord.post({ user: alice, content: 'just chatting with friends' });
      await expect.poll(async () => (await h!.api('GET', '/api/discord_messages?order=asc')).json().length).toBe(2);
      // The two arrive together and are stored as they are handled, so their order in the list may differ from Discord's.
      const stored = (await h.api('GET', '/api/discord_messages?order=asc')).json() as { message_id: string }[];
      stored.sort((a, b) => (BigInt(a.message_id) < BigInt(b.message_id) ? -1 : 1));
      expect(stored).toEqual([
        expect.objectContaining({ message_id: mention.id, content: `<@${h.discord.bot.id}> are you a robot?`, user_id: troll.id, username: 'troll', channel_id: h.discord.channels.general.id, guild_id: h.discord.guild.id }),
        expect.objectContaining({ message_id: reply.id, content: 'thanks, found it!', referenced_message_id: answer!.id }),
      ]);

      // In a DM: the command is answered there, and a message to the bot is stored.
      const dm = h.discord.dmChannel(alice);
      const inDm = h.ask(alice, 'Where is the costume contest?', { channel: dm });
      const [dmAnswer] = await h.answerOf(inDm);
      expect(dmAnswer).toMatchObject({ channel_id: dm.id, ephemeral: false });
      expect(await h.command(inDm)).toMatchObject({ context: 'dm', guild_id: null, channel_id: dm.id, state: 'completed' });
      const direct = h.discord.post({ user: alice, channel: dm, content: 'hello there' });
      await expect.poll(async () => (await h!.api('GET', '/api/discord_messages')).json()[0]?.message_id).toBe(direct.id);
      expect((await h.api('GET', '/api/discord_messages')).json()[0]).toMatchObject({ content: 'hello there', guild_id: null, channel_id: dm.id });

      expect((await h.api('PATCH', `/api/user/${troll.id}`, { ignored: true })).statusCode).toBe(200);
      const ignored = h.ask(troll, 'Where is the lost and found?');
      await expect.poll(() => ignored.original?.deleted ?? false).toBe(true);
      expect(ignored.followUps).toEqual([]);
      expect(await h.command(ignored)).toMatchObject({ state: 'ignored' });
    },
    BUDGET_MS,
  );

  it(
    'is driven from the console: disconnect, connect and register, with the reason on Status; the gateway off in the config',
    async () => {
      h = await startDiscordHarness();
      const disconnected = await h.api('POST', '/api/discord/disconnect');
      expect(disconnected.json()).toEqual({ success: true, connected: false, message: 'Disconnected from Discord' });
      expect(h.discord.connected).toBe(0);
      expect((await h.api('GET', '/healthz')).json().discord_gateway_connected).toBe(false);
      expect((await statusOf()).discord).toMatchObject({ connected: false, state: 'off', reason: GATEWAY_REASONS.operator, disconnects: 1 });
      await h.ctx.deps.discord.tick();
      expect(h.discord.connected).toBe(0);

      const connected = await h.api('POST', '/api/discord/connect');
      expect(connected.json()).toEqual({ success: true, connected: true, message: 'Connected to Discord' });
      expect(h.discord.connected).toBe(1);
      expect((await statusOf()).discord).toMatchObject({ connected: true, reason: null, connects: 2 });

      h.discord.commands = [];
      const registered = await h.api('POST', '/api/discord/register_commands');
      expect(registered.json()).toEqual({ success: true, commands: ['ask', 'whisper', 'forget'] });
      expect(h.discord.commands.map((command) => command.name)).toEqual(['ask', 'whisper', 'forget']);

      await h.configure({ discord_gateway_enabled: false });
      await expect.poll(() => h!.discord.connected).toBe(0);
      expect((await statusOf()).discord).toMatchObject({ state: 'off', reason: GATEWAY_REASONS.disabled });
      expect(await h.api('POST', '/api/discord/connect')).toMatchObject({ statusCode: 409 });
      await h.configure({ discord_gateway_enabled: true });
      await expect.poll(() => h!.discord.connected).toBe(1);
    },
    BUDGET_MS,
  );

  it(
    'survives an error in a handler (recover_panic): the user told, the operator told, the bot goes on; with it off the bot stops and says why',
    async () => {
      h = await startDiscordHarness();
      const alice = h.discord.user('alice');
      const users = h.ctx.deps.users;
      const forget = users.forget.bind(users);
      users.forget = async () => {
        throw new Error('the database went away');
      };
      const broken = h.discord.slashCommand({ command: 'forget', user: alice });
      expect(await acknowledged(broken)).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: 'Sorry, something went wrong!' } });
      await expect.poll(() => h!.notifications().some((text) => text.includes('/forget by **Alice**') && text.includes('the database went away'))).toBe(true);
      await h.answerOf(h.ask(alice, 'Where is the lost and found?'));

      await h.configure({ recover_panic: false });
      await acknowledged(h.discord.slashCommand({ command: 'forget', user: alice }));
      await expect.poll(() => h!.discord.connected).toBe(0);
      await expect.poll(async () => (await statusOf()).discord.reason).toBe('Stopped after an error in a command handler (recover_panic is off): the database went away');
      users.forget = forget;
      expect((await h.api('POST', '/api/discord/connect')).json()).toMatchObject({ connected: true });
    },
    BUDGET_MS,
  );

  it(
    'with ack_early off, stores the command first and then defers, and the answer still arrives',
    async () => {
      h = await startDiscordHarness({ config: { ack_early: false } });
      const interaction = h.ask(h.discord.user('alice'), 'Where is the lost and found?', { whisper: true });
      const [answer] = await h.answerOf(interaction);
      expect(interaction.callback).toMatchObject({ type: 5, data: { flags: EPHEMERAL } });
      expect(interaction.callback!.at - interaction.created_at).toBeLessThan(3000);
      expect(answer).toMatchObject({ ephemeral: true });
      await expect.poll(() => h!.command(interaction)).toMatchObject({ acknowledged: true, state: 'completed' });
    },
    BUDGET_MS,
  );

  it(
    'tells the notification channel about the events the crawler found moved or cancelled, and about a spent token budget',
    async () => {
      const fixtures = await startFixtureServer();
      const feed = (changes: { cancelled?: boolean; room?: string; start?: string } = {}) =>
        JSON.stringify({
          timezone: 'America/Chicago',
          events: [
            { id: 'contest', title: 'Costume Contest', start: '2026-03-14T19:00:00-05:00', location: 'Main Stage', ...(changes.cancelled ? { status: 'cancelled' } : {}) },
            { id: 'jam', title: 'Art Jam', start: '2026-03-14T10:00:00-05:00', location: changes.room ?? 'Hall A' },
            { id: 'quiz', title: 'Trivia Night', start: changes.start ?? '2026-03-14T20:00:00-05:00', location: 'Hall C' },
            { id: 'yoga', title: 'Morning Yoga', start: '2026-03-15T08:00:00-05:00', location: 'Hall D' },
          ],
        });
      try {
        fixtures.route('/schedule.json', { body: feed(), contentType: 'application/json' });
        h = await startDiscordHarness({ env: { CRAWLER_URL: `${fixtures.url}/schedule.json`, CONVENTION_TIMEZONE: 'America/Chicago' } });
        expect((await h.api('POST', '/api/schedule/refresh')).statusCode).toBe(200);
        fixtures.route('/schedule.json', { body: feed({ cancelled: true, room: 'Hall B', start: '2026-03-14T21:00:00-05:00' }), contentType: 'application/json' });
        expect((await h.api('POST', '/api/schedule/refresh')).json()).toMatchObject({ skipped: false, changes: 3 });
        await expect.poll(() => h!.notifications().find((text) => text.startsWith('📅'))).toBeDefined();
        expect(h.notifications().find((text) => text.startsWith('📅'))).toBe(
          [
            '📅 Schedule changes',
            '• Cancelled: **Costume Contest** (Sat 14 Mar, 19:00 CDT, Main Stage)',
            '• Moved: **Trivia Night** Sat 14 Mar, 20:00 CDT → Sat 14 Mar, 21:00 CDT',
            '• Moved: **Art Jam** Hall A → Hall B',
          ].join('\n'),
        );
        // The spending cap's once-a-day announcement goes to the same channel.
        h.ctx.deps.events.publish('budget_exhausted', { day: '2026-03-14', spent: 120_500, budget: 100_000, action: 'offline' });
        await expect
          .poll(() => h!.notifications().at(-1))
          .toBe("💸 Today's token budget is spent (120,500 of 100,000 tokens): the offline assistant answers until midnight (convention time), or until the budget is raised on the Config screen.");
      } finally {
        await fixtures.close();
      }
    },
    BUDGET_MS,
  );

  it(
    'runs the gateway in the leader only: a follower never connects, a new leader takes the gateway at once, and a deposed one leaves it',
    async () => {
      h = await startDiscordHarness(); // this process is the leader: its bot was started
      const env = { DISCORD_TOKEN: h.discord.token, DISCORD_APPLICATION_ID: h.discord.applicationId, DISCORD_API_URL: h.discord.apiUrl, OPENAI_API_KEY: h.openai.apiKey, OPENAI_BASE_URL: h.openai.url };
      const other = await createTestContext({ clock: h.time.clock, database: h.ctx.database, env });
      try {
        // A follower: its bot is not started, so it never connects, even when asked to.
        await other.deps.discord.tick();
        expect(other.deps.discord.connected).toBe(false);
        expect(await other.deps.discord.connect()).toMatchObject({ connected: false, message: expect.stringContaining('Another server process (the leader) runs the Discord bot') });
        expect(h.discord.connected).toBe(1);
        // Every process shows the same figures: they are the database's.
        expect(await other.deps.discord.figures()).toMatchObject({ connected: true, connects: 1 });

        // The other becomes the leader (its leadership starts the bot) while the first still holds the gateway, as when
        // the first lost its database connection: the new leader connects at once, without waiting for anything…
        other.deps.discord.start();
        await other.deps.discord.tick();
        expect(other.deps.discord.connected).toBe(true);
        expect(h.discord.identifies).toBe(2);
        // …and the deposed one leaves the gateway on its next look.
        await h.ctx.deps.discord.tick();
        expect(h.ctx.deps.discord.connected).toBe(false);
        await expect.poll(() => h!.discord.connected).toBe(1);
        expect(await other.deps.discord.figures()).toMatchObject({ connected: true, connects: 2, disconnects: 1 });
        const [answer] = await h.answerOf(h.ask(h.discord.user('alice'), 'Where is the lost and found?'));
        expect(answer!.content).toContain('registration desk');
      } finally {
        await other.deps.discord.stop();
        await other.close();
      }
    },
    BUDGET_MS,
  );

  it(
    'says why it cannot connect, in one log line, on Status and in the reply to Connect: a refused token, no session starts left, Discord unreachable',
    async () => {
      const discord = await startFakeDiscord();
      const ctx = await createTestContext({ env: { DISCORD_TOKEN: discord.token, DISCORD_APPLICATION_ID: discord.applicationId, DISCORD_API_URL: discord.apiUrl } });
      const lines: { level: number; msg: string }[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const botWith = (token: string) =>
        new DiscordBot({
          token,
          applicationId: discord.applicationId,
          apiUrl: discord.apiUrl,
          owner: ctx.deps.pipeline.owner,
          database: ctx.deps.database,
          clock: ctx.deps.clock,
          config: ctx.deps.config,
          logger,
          gatewayLogger: logger,
          notificationLogger: logger,
          askCommands: ctx.deps.askCommands,
          users: ctx.deps.users,
          events: ctx.deps.events,
          timeZone: () => 'UTC',
          productName: 'Con Concierge',
        });
      // Each runs as the leader's bot would (started), so it tries to connect.
      const leaderBotWith = (token: string) => {
        const bot = botWith(token);
        bot.start();
        return bot;
      };
      const status = async () => (await ctx.app.inject({ method: 'GET', url: '/api/status', headers: { cookie: await signIn(ctx.app) } })).json();
      const errors = () => lines.filter((line) => line.level === 50).map((line) => line.msg);
      try {
        const refused = leaderBotWith('not-the-token');
        await refused.tick();
        const reason = 'Discord refused the bot token (401 Unauthorized): check DISCORD_TOKEN.';
        expect(errors()).toEqual([`Discord bot cannot connect: ${reason}`]);
        expect((await status()).discord).toMatchObject({ configured: true, connected: false, state: 'failed', reason });
        expect((await status()).warnings).toContain(`Discord bot: ${reason}`);
        // Retrying cannot help a refused token: the bot waits for an operator.
        await refused.tick();
        expect(errors()).toHaveLength(1);
        await expect(refused.connect()).rejects.toMatchObject({ status: 502, message: `Could not connect to Discord: ${reason}` });
        await refused.stop();

        discord.knobs.sessionStartRemaining = 0;
        const limited = leaderBotWith(discord.token);
        await limited.tick();
        expect((await limited.figures()).reason).toMatch(/^Discord's limit of gateway session starts is used up: Not enough sessions remaining/);
        await limited.stop();

        await discord.close();
        const unreachable = leaderBotWith(discord.token);
        await unreachable.tick();
        const unreachableReason = (await unreachable.figures()).reason!;
        expect(unreachableReason.startsWith(`Could not reach Discord at ${discord.apiUrl}: `)).toBe(true);
        expect(unreachableReason).toMatch(/\((ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET)\)\.$/);
        expect(errors().at(-1)).toBe(`Discord bot cannot connect: ${unreachableReason}`);
        await unreachable.stop();
      } finally {
        await ctx.close();
        await discord.close();
      }
    },
    BUDGET_MS,
  );
});
