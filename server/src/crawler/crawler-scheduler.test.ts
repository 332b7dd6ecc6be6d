import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../test-support/test-context.ts';

describe('the crawler schedule', () => {
  let ctx: TestContext;
  beforeEach(async () => {
    ctx = await createTestContext();
  });
  afterEach(() => ctx.close());

  it('follows crawler_schedule and re-schedules as soon as it is edited', async () => {
    const scheduler = ctx.deps.crawlerScheduler;
    scheduler.start({ runNow: false });
    const first = scheduler.nextRun();
    expect(first).not.toBeNull();
    expect(first!.getUTCMinutes() % 30).toBe(0); // default "*/30 * * * *"

    await ctx.deps.config.update({ crawler_schedule: '7 3 * * *' });
    const next = scheduler.nextRun()!;
    expect(next.getMinutes()).toBe(7);
    expect(next.getHours()).toBe(3);
    await scheduler.stop();
    expect(scheduler.nextRun()).toBeNull();
  });
});
