import type { TokenBudgetAction } from '@concierge/contract';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ConfigService } from '../config/config.service.ts';
import type { Database, Db } from '../db/database.ts';
import { onQueryThread } from '../db/query-thread.ts';
import { StatementTemplate } from '../db/statement-template.ts';
import type { EventBus } from '../events.ts';
import { localDay } from '../time-zone.ts';
import { TurnBatch } from '../turn-batch.ts';

/** How long a process trusts its last reading of the day's spending before reading it again (other processes spend too). */
const FRESH_MS = 2000;

export interface BudgetState {
  /** The convention-local day the figures are for. */
  day: string;
  /** 0 = no cap. */
  daily_budget: number;
  spent_today: number;
  exhausted: boolean;
  action: TokenBudgetAction;
}

/** Adds to the day's spending, built once (StatementTemplate): every batch of answers that ends spends. */
const addSpendStatement = new StatementTemplate((db, { day, tokens, now }: { day: string; tokens: number; now: string }) =>
  db
    .insertInto('token_spend')
    .values({ day, tokens, updated_at: now })
    .onConflict((conflict) => conflict.column('day').doUpdateSet((eb) => ({ tokens: eb('token_spend.tokens', '+', eb.ref('excluded.tokens')), updated_at: now })))
    .returning('tokens'),
);

const addSpend = async (db: Db, day: string, tokens: number, now: string): Promise<{ tokens: number }> => {
  const { rows } = await addSpendStatement.execute<{ tokens: number }>(db, { day, tokens, now });
  if (!rows[0]) throw new Error('the day\'s token spending was not returned');
  return rows[0];
};

const readSpend = (db: Db, day: string) => db.selectFrom('token_spend').select('tokens').where('day', '=', day).executeTakeFirst();

/** Marks the day spent; true only for the one caller (in any process) that marked it first. */
async function markExhausted(db: Db, day: string, now: string): Promise<boolean> {
  const result = await db.updateTable('token_spend').set({ exhausted_at: now }).where('day', '=', day).where('exhausted_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Adds tokens to the day's spending; returns the day's total and whether
 * this addition is the one that first spent `budget` (0: no cap).
 */
const spend = onQueryThread(
  'budget.spend',
  async (database: Database, { day, tokens, now, budget }: { day: string; tokens: number; now: string; budget: number }): Promise<{ total: number; spentFirst: boolean }> => {
    const total = Number((await addSpend(database.db, day, tokens, now)).tokens);
    return { total, spentFirst: budget > 0 && total >= budget && (await markExhausted(database.db, day, now)) };
  },
  // Called by a TurnBatch as a turn ends.
  { atTurnEnd: true },
);

/**
 * The spending cap (config `daily_token_budget`, 0 = none): provider tokens
 * spent per convention day, kept in the database so every process counts
 * against the same figure. Once the day's budget is spent the pipeline
 * answers with the offline assistant, or refuses as if paused
 * (`token_budget_action`), until the convention's midnight or until the
 * budget is raised; the first process to notice publishes
 * `budget_exhausted` once (the Discord notification channel is told).
 */
export class TokenBudget {
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #config: ConfigService;
  readonly #events: EventBus;
  readonly #logger: Logger;
  readonly #timeZone: () => string;
  #known: { day: string; tokens: number; at: number } | null = null;
  #refreshing: Promise<void> | null = null;
  /** The spending of the answers that end in one turn of the event loop, added in one statement (per day). */
  readonly #spending = new TurnBatch<{ day: string; tokens: number }>((items) => this.#add(items));

  constructor(options: { database: Database; clock: Clock; config: ConfigService; events: EventBus; logger: Logger; timeZone: () => string }) {
    this.#database = options.database;
    this.#clock = options.clock;
    this.#config = options.config;
    this.#events = options.events;
    this.#logger = options.logger;
    this.#timeZone = options.timeZone;
  }

  #today(): string {
    return localDay(this.#clock.now(), this.#timeZone());
  }

  /**
   * The state as this process last read it, read again in the background
   * when stale: the check on every question costs no query.
   */
  state(): BudgetState {
    const config = this.#config.get();
    const day = this.#today();
    const known = this.#known?.day === day ? this.#known : null;
    if (config.daily_token_budget > 0 && (!known || this.#clock.now().getTime() - known.at > FRESH_MS)) void this.refresh();
    const spent = known?.tokens ?? 0;
    return {
      day,
      daily_budget: config.daily_token_budget,
      spent_today: spent,
      exhausted: config.daily_token_budget > 0 && spent >= config.daily_token_budget,
      action: config.token_budget_action,
    };
  }

  /** Reads the day's spending from the database (what every process has spent). */
  refresh(): Promise<void> {
    this.#refreshing ??= (async () => {
      const day = this.#today();
      try {
        const row = await readSpend(this.#database.db, day);
        this.#known = { day, tokens: Number(row?.tokens ?? 0), at: this.#clock.now().getTime() };
      } catch (error) {
        this.#logger.error({ err: error }, 'could not read the day\'s token spending');
      }
    })().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  /** Adds tokens a paid provider used; announces the budget spent the first time it is. Never throws. */
  async record(tokens: number): Promise<void> {
    if (tokens <= 0) return;
    try {
      await this.#spending.add({ day: this.#today(), tokens });
    } catch (error) {
      this.#logger.error({ err: error, tokens }, 'could not record token spending');
    }
  }

  async #add(items: { day: string; tokens: number }[]): Promise<void> {
    const perDay = new Map<string, number>();
    for (const { day, tokens } of items) perDay.set(day, (perDay.get(day) ?? 0) + tokens);
    for (const [day, tokens] of perDay) {
      const now = this.#clock.now();
      const budget = this.#config.get().daily_token_budget;
      const { total, spentFirst } = await spend(this.#database, { day, tokens, now: now.toISOString(), budget });
      this.#known = { day, tokens: total, at: now.getTime() };
      if (spentFirst) {
        const action = this.#config.get().token_budget_action;
        this.#logger.warn({ day, spent: total, budget, action }, 'the daily token budget is spent');
        this.#events.publish('budget_exhausted', { day, spent: total, budget, action });
      }
    }
  }
}
