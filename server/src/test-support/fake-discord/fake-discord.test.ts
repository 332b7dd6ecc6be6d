import { ActivityType, Client, Events, GatewayIntentBits, MessageFlags, REST, Routes, type Interaction } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from './fake-discord.ts';

/** Raw REST calls, as a bot would make them, to see exactly what the fake answers. */
async function call(fake: FakeDiscord, method: string, path: string, body?: unknown, auth = true) {
  const response = await fetch(`${fake.apiUrl}/v10${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(auth ? { authorization: `Bot ${fake.token}` } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as { code?: number; message?: string; errors?: unknown }) : null };
}

const ASK = { name: 'ask', description: 'Ask', options: [{ name: 'question', description: 'Your question', type: 3, required: true, min_length: 1, max_length: 500 }] };

describe('the fake Discord speaks the wire protocol discord.js 14 expects', () => {
  let fake: FakeDiscord;
  let client: Client | undefined;

  beforeEach(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(async () => {
    // A client caught between connections (a test that resumes and re-identifies) may not finish its close
    // handshake: it gets a few seconds, then the fake ends every connection itself.
    const destroyed = client?.destroy();
    client = undefined;
    await Promise.race([destroyed, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    await fake.close();
  });

  async function connect(intents = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages]) {
    client = new Client({ intents, rest: { api: fake.apiUrl } });
    const ready = new Promise<void>((resolve) => client!.once(Events.ClientReady, () => resolve()));
    const started = Date.now();
    await client.login(fake.token);
    await ready;
    return { client, readyInMs: Date.now() - started };
  }

  it('lets discord.js log in and be ready at once: one GET /gateway/bot, READY, then the guild', async () => {
    const { client, readyInMs } = await connect();
    expect(readyInMs).toBeLessThan(3000);
    expect(fake.requests.map((entry) => `${entry.method} ${entry.path}`)).toEqual(['GET /api/v10/gateway/bot']);
    expect(client.guilds.cache.get(fake.guild.id)?.channels.cache.get(fake.channels.general.id)?.name).toBe('general');
    expect(client.user?.id).toBe(fake.bot.id);

    client.user!.setPresence({ status: 'dnd', activities: [{ type: ActivityType.Custom, name: 'Custom Status', state: 'Paused for now' }] });
    await expect.poll(() => fake.presence).toMatchObject({ via: 'update', status: 'dnd', activities: [{ type: 4, state: 'Paused for now' }] });
  });

  it('refuses bot routes without the bot token, and answers webhooks without one', async () => {
    expect((await call(fake, 'GET', '/gateway/bot', undefined, false)).status).toBe(401);
    expect((await call(fake, 'GET', '/users/@me')).body).toMatchObject({ id: fake.bot.id, bot: true });
    expect((await call(fake, 'PUT', `/applications/${fake.applicationId}/commands`, [ASK])).status).toBe(200);
  });

  it('enforces the limits of commands, messages and components with code 50035, and 50006 for an empty message', async () => {
    const put = (commands: unknown) => call(fake, 'PUT', `/applications/${fake.applicationId}/commands`, commands);
    expect(await put([{ ...ASK, description: '' }])).toMatchObject({ status: 400, body: { code: 50035, errors: { 0: { description: expect.anything() } } } });
    expect(await put([{ ...ASK, description: 'x'.repeat(101) }])).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(await put([{ ...ASK, options: [{ ...ASK.options[0], description: 'x'.repeat(101) }] }])).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(await put([{ ...ASK, options: [{ ...ASK.options[0], max_length: 6001 }] }])).toMatchObject({ status: 400, body: { code: 50035 } });

    const channel = `/channels/${fake.channels.general.id}/messages`;
    expect(await call(fake, 'POST', channel, { content: 'x'.repeat(2001) })).toMatchObject({ status: 400, body: { code: 50035, errors: { content: expect.anything() } } });
    expect((await call(fake, 'POST', channel, { content: 'x'.repeat(2000) })).status).toBe(200);
    expect(await call(fake, 'POST', channel, { content: '' })).toMatchObject({ status: 400, body: { code: 50006 } });
    const button = (id: string) => ({ type: 2, style: 2, label: id.slice(0, 20), custom_id: id });
    const sixButtons = [{ type: 1, components: ['a', 'b', 'c', 'd', 'e', 'f'].map(button) }];
    expect(await call(fake, 'POST', channel, { content: 'hi', components: sixButtons })).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(await call(fake, 'POST', channel, { content: 'hi', components: [{ type: 1, components: [button('x'.repeat(101))] }] })).toMatchObject({ status: 400, body: { code: 50035 } });
    expect((await call(fake, 'POST', channel, { content: 'hi', components: [{ type: 1, components: [button('x'.repeat(100))] }] })).status).toBe(200);
  });

  describe('interactions', () => {
    async function withAsk(beforeAsking: (client: Client) => void = () => {}) {
      await call(fake, 'PUT', `/applications/${fake.applicationId}/commands`, [ASK]);
      const { client } = await connect();
      beforeAsking(client);
      const alice = fake.user('alice');
      return { alice, interaction: fake.slashCommand({ command: 'ask', options: { question: 'Where is Hall B?' }, user: alice }) };
    }
    const callback = (interaction: { id: string; token: string }, body: unknown) => call(fake, 'POST', `/interactions/${interaction.id}/${interaction.token}/callback?with_response=false`, body, false);
    const webhook = (method: string, interaction: { token: string }, suffix: string, body?: unknown) => call(fake, method, `/webhooks/${fake.applicationId}/${interaction.token}${suffix}`, body, false);

    it('delivers a slash command that discord.js reads, and takes one callback only', async () => {
      let received: Promise<Interaction> | undefined;
      const { interaction } = await withAsk((client) => (received = new Promise((resolve) => client.once(Events.InteractionCreate, resolve))));
      const seen = await received!;
      expect(seen.isChatInputCommand() && seen.options.getString('question')).toBe('Where is Hall B?');
      expect(seen.channelId).toBe(fake.channels.general.id);

      expect((await callback(interaction, { type: 5, data: { flags: MessageFlags.Ephemeral } })).status).toBe(204);
      expect(await callback(interaction, { type: 5 })).toMatchObject({ status: 400, body: { code: 40060 } });
      expect(interaction.original).toMatchObject({ loading: true, ephemeral: true });
    });

    it('refuses a callback after 3 s (10062) and the webhook after 15 minutes (50027)', async () => {
      const { alice } = await withAsk();
      const late = fake.slashCommand({ command: 'ask', options: { question: 'late' }, user: alice });
      fake.advance(3001);
      expect(await callback(late, { type: 5 })).toMatchObject({ status: 404, body: { code: 10062 } });

      const timely = fake.slashCommand({ command: 'ask', options: { question: 'on time' }, user: alice });
      expect((await callback(timely, { type: 5 })).status).toBe(204);
      fake.advance(14 * 60_000);
      expect((await webhook('PATCH', timely, '/messages/@original', { content: 'still in time' })).status).toBe(200);
      fake.advance(60_001);
      expect(await webhook('PATCH', timely, '/messages/@original', { content: 'too late' })).toMatchObject({ status: 401, body: { code: 50027 } });
    });

    it('makes the first follow-up after a deferral take its place and ephemeral state; later ones are ephemeral only when flagged', async () => {
      const { interaction } = await withAsk();
      await callback(interaction, { type: 5, data: { flags: MessageFlags.Ephemeral } });
      const first = await webhook('POST', interaction, '?wait=true', { content: 'part one' });
      expect(first.body).toMatchObject({ id: interaction.original!.id, flags: MessageFlags.Ephemeral });
      await webhook('POST', interaction, '?wait=true', { content: 'part two' });
      await webhook('POST', interaction, '?wait=true', { content: 'part three', flags: MessageFlags.Ephemeral });
      expect(fake.messages().map((message) => [message.content, message.ephemeral])).toEqual([
        ['part one', true],
        ['part two', false],
        ['part three', true],
      ]);
    });

    it('checks a modal: title and labels at most 45, placeholder at most 100', async () => {
      const { interaction } = await withAsk();
      const modal = (changes: { title?: string; label?: string; placeholder?: string }) => ({
        type: 9,
        data: {
          custom_id: 'fbm:other:1',
          title: changes.title ?? 'Report a problem',
          components: [{ type: 18, label: changes.label ?? 'What was wrong?', component: { type: 4, custom_id: 'description', style: 2, placeholder: changes.placeholder ?? 'Tell us', min_length: 5, max_length: 2000 } }],
        },
      });
      expect(await callback(interaction, modal({ title: 'x'.repeat(46) }))).toMatchObject({ status: 400, body: { code: 50035 } });
      expect(await callback(interaction, modal({ label: 'x'.repeat(46) }))).toMatchObject({ status: 400, body: { code: 50035 } });
      expect(await callback(interaction, modal({ placeholder: 'x'.repeat(101) }))).toMatchObject({ status: 400, body: { code: 50035 } });
      expect((await callback(interaction, modal({}))).status).toBe(204);
      const submitted = fake.submitModal(interaction, { description: 'The room moved' });
      expect(submitted.payload).toMatchObject({ type: 5, data: { custom_id: 'fbm:other:1', components: [{ type: 18, component: { custom_id: 'description', value: 'The room moved' } }] } });
    });
  });

  describe('the gateway', () => {
    it('answers heartbeats, and is resumed after close 4000 and op 7, identified again after op 9', async () => {
      await fake.close();
      fake = await startFakeDiscord({ knobs: { heartbeatIntervalMs: 200 } });
      const { client } = await connect();
      // Resumes as the client saw them: it handles RESUMED after the fake has counted the resume.
      let resumed = 0;
      client.on(Events.ShardResume, () => resumed++);
      const session = fake.sessions[0]!;
      await expect.poll(() => session.heartbeats).toBeGreaterThan(1);
      await expect.poll(() => client.ws.ping).toBeGreaterThanOrEqual(0);

      fake.disconnect(4000);
      await expect.poll(() => session.resumes, { timeout: 5000 }).toBe(1);
      await expect.poll(() => resumed, { timeout: 5000 }).toBe(1);
      fake.requestReconnect();
      await expect.poll(() => session.resumes, { timeout: 5000 }).toBe(2);
      expect(fake.identifies).toBe(1);
      // An Invalid Session that overtakes the client's handling of RESUMED makes discord.js read a cleared session.
      await expect.poll(() => resumed, { timeout: 5000 }).toBe(2);

      fake.invalidateSession(false);
      // discord.js waits out the identify throttle (5 s after the last identify) before identifying again.
      await expect.poll(() => fake.identifies, { timeout: 12_000 }).toBe(2);
      await expect.poll(() => fake.connected).toBe(1);
    }, 20_000);

    it('closes with 4004 on a wrong token and 4014 on a privileged intent not switched on', async () => {
      const wrong = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl } });
      // The REST token is right (so /gateway/bot answers), the gateway token is not.
      wrong.rest.setToken(fake.token);
      await expect(new REST({ api: fake.apiUrl }).setToken('nope').get(Routes.gatewayBot())).rejects.toMatchObject({ status: 401 });
      await wrong.destroy();
      const greedy = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.MessageContent], rest: { api: fake.apiUrl } });
      const closed = new Promise<number>((resolve) => greedy.on(Events.ShardDisconnect, (event) => resolve(event.code)));
      void greedy.login(fake.token).catch(() => {});
      expect(await closed).toBe(4014);
      await greedy.destroy();
    });
  });
});
