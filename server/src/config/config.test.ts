import { CONFIG_FIELDS } from '@concierge/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, signIn, type TestContext } from '../test-support/test-context.ts';
import type { ConfigChange } from './config.service.ts';

describe('runtime configuration API', () => {
  let ctx: TestContext;
  let cookie: string;
  beforeEach(async () => {
    ctx = await createTestContext();
    cookie = await signIn(ctx.app);
  });
  afterEach(() => ctx.close());

  const get = () => ctx.app.inject({ url: '/api/config', headers: { cookie } });
  const patch = (payload: unknown, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie, ...headers }, payload: payload as object });

  it('returns every field with its default', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    const config = response.json();
    for (const field of CONFIG_FIELDS) expect(config, field).toHaveProperty(field);
    expect(config).toMatchObject({
      id: 1,
      paused: false,
      public_chat_requests_per_minute: 10,
      assistant_poll_interval: '3s',
      assistant_max_poll_interval: '30s',
      openai_truncation_strategy_type: 'auto',
      crawler_schedule: '*/30 * * * *',
      public_chat_turnstile_validation_enabled: false,
      log_level: 'INFO',
    });
    expect(config.assistant_instructions).toContain('Con Concierge');
    expect(config.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes only the fields sent and returns the whole configuration', async () => {
    const before = (await get()).json();
    const response = await patch({ public_chat_requests_per_minute: 30, discord_custom_status: 'Ask me!', log_level: 'debug' });
    expect(response.statusCode).toBe(200);
    const after = response.json();
    expect(after).toMatchObject({ public_chat_requests_per_minute: 30, discord_custom_status: 'Ask me!', log_level: 'DEBUG' });
    for (const field of CONFIG_FIELDS) {
      if (!['public_chat_requests_per_minute', 'discord_custom_status', 'log_level'].includes(field)) {
        expect(after[field], field).toEqual(before[field]);
      }
    }
    expect(after.hash).not.toBe(before.hash);
    expect((await get()).json()).toEqual(after);
  });

  it('accepts openai_completion_tokens as the other name of openai_max_completion_tokens', async () => {
    const response = await patch({ openai_completion_tokens: 800 });
    expect(response.statusCode).toBe(200);
    expect(response.json().openai_max_completion_tokens).toBe(800);
  });

  it.each([
    [{ public_chat_requests_per_minute: 0 }, 'public_chat_requests_per_minute'],
    [{ public_chat_requests_per_minute: 61 }, 'public_chat_requests_per_minute'],
    [{ public_chat_requests_per_minute: '10' }, 'public_chat_requests_per_minute'],
    [{ public_chat_requests_per_minute: 2.5 }, 'public_chat_requests_per_minute'],
    [{ assistant_poll_interval: 'soon' }, 'assistant_poll_interval'],
    [{ assistant_poll_interval: '10ms' }, 'assistant_poll_interval'],
    [{ openai_truncation_strategy_type: 'middle' }, 'openai_truncation_strategy_type'],
    [{ openai_max_prompt_tokens: 100 }, 'openai_max_prompt_tokens'],
    [{ feedback_modal_title: 'x'.repeat(46) }, 'feedback_modal_title'],
    [{ log_level: 'LOUD' }, 'log_level'],
    [{ paused: 'yes' }, 'paused'],
    [{ donation_url: 'javascript:alert(1)' }, 'donation_url'],
    [{ donated_role_id: 'abc' }, 'donated_role_id'],
    [{ crawler_schedule: 'every day' }, 'crawler_schedule'],
    [{ assistant_poll_interval: '45s' }, 'assistant_poll_interval'],
    [{ feedback_modal_min_length: 3000 }, 'feedback_modal_min_length'],
    [{ public_chat_turnstile_validation_enabled: true }, 'public_chat_turnstile_validation_enabled'],
    [{ public_chat_welcome_message: '   ' }, 'public_chat_welcome_message'],
    [{ public_chat_about_text: '' }, 'public_chat_about_text'],
    [{ public_chat_paused_message: 'x'.repeat(1001) }, 'public_chat_paused_message'],
    [{ public_chat_example_prompts: Array.from({ length: 9 }, (_, n) => `Prompt ${n}`).join('\n') }, 'public_chat_example_prompts'],
    [{ public_chat_example_prompts: `Short one\n${'x'.repeat(201)}` }, 'public_chat_example_prompts'],
  ])('refuses %j with a 400 naming the field, changing nothing', async (body, field) => {
    const before = (await get()).json();
    const response = await patch(body);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'validation_error', field });
    expect(response.json().error).toMatch(new RegExp(`^${field}: `));
    expect((await get()).json()).toEqual(before);
  });

  it('refuses unknown fields', async () => {
    const response = await patch({ public_chat_requests_per_minute: 20, no_such_field: true });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toContain('no_such_field');
    expect((await get()).json().public_chat_requests_per_minute).toBe(10);
  });

  it('answers garbage, wrong content types and wrong shapes with a 4xx JSON error', async () => {
    const before = (await get()).json();
    const cases = [
      { payload: '{"paused": tru', headers: { 'content-type': 'application/json' } },
      { payload: 'paused=true', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      { payload: 'hello', headers: { 'content-type': 'text/plain' } },
      { payload: '[1,2,3]', headers: { 'content-type': 'application/json' } },
      { payload: 'null', headers: { 'content-type': 'application/json' } },
      { payload: JSON.stringify({ assistant_instructions: 'x'.repeat(300_000) }), headers: { 'content-type': 'application/json' } },
    ];
    for (const { payload, headers } of cases) {
      const response = await ctx.app.inject({ method: 'PATCH', url: '/api/config', payload, headers: { cookie, ...headers } });
      expect(response.statusCode, payload.slice(0, 30)).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, payload.slice(0, 30)).toBeLessThan(500);
      expect(typeof response.json().error).toBe('string');
    }
    expect((await get()).json()).toEqual(before);
  });

  it('tells subscribers which fields changed', async () => {
    const changes: ConfigChange[] = [];
    ctx.deps.config.onChange((change) => changes.push(change));
    await patch({ crawler_schedule: '*/5 * * * *', paused: false });
    expect(changes).toHaveLength(1);
    expect(changes[0]!.changed).toEqual(['crawler_schedule']);
    expect(changes[0]!.config.crawler_schedule).toBe('*/5 * * * *');
    expect(changes[0]!.previous.crawler_schedule).toBe('*/30 * * * *');
    await patch({ paused: false });
    expect(changes).toHaveLength(1);
  });

  it('keeps edits across a restart (the seed never overwrites them)', async () => {
    await patch({ public_chat_requests_per_minute: 42 });
    await ctx.deps.config.start();
    expect(ctx.deps.config.get().public_chat_requests_per_minute).toBe(42);
  });
});

describe('turnstile validation with keys configured', () => {
  it('can be switched on', async () => {
    const ctx = await createTestContext({ env: { TURNSTILE_SITE_KEY: 'site', TURNSTILE_SECRET_KEY: 'secret' } });
    try {
      const cookie = await signIn(ctx.app);
      const response = await ctx.app.inject({ method: 'PATCH', url: '/api/config', headers: { cookie }, payload: { public_chat_turnstile_validation_enabled: true } });
      expect(response.statusCode).toBe(200);
      expect(JSON.stringify(response.json())).not.toContain('secret');
    } finally {
      await ctx.close();
    }
  });
});
