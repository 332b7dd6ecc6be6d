import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventBus } from '../events.ts';

/** What the scrape-time gauges are read from (the Status figures, kept in the database). */
export interface MetricsSnapshot {
  paused: boolean;
  /** This process runs the background work (the leader; README "Several processes"). */
  leader: boolean;
  /** Ask commands waiting for the worker. */
  queueDepth: number;
  crawler: {
    enabled: boolean;
    last_success_at: string | null;
    last_failure_at: string | null;
    consecutive_failures: number;
    /** The newest run, when it is held until an operator forces a refresh. */
    held_run: unknown;
  };
  token_budget: { daily_budget: number; spent_today: number; exhausted: boolean };
  public_chat: {
    session_count: number;
    active_session_count: number;
    message_state_counts: Record<string, number>;
    feedback_type_counts: Record<string, number>;
    rate_limit_exceeded_count: number;
  };
}

export interface MetricsOptions {
  events: EventBus;
  /** Read once per scrape. */
  snapshot: () => Promise<MetricsSnapshot>;
  version: string;
}

const seconds = (ms: number) => ms / 1000;
const epochSeconds = (iso: string | null) => (iso ? Date.parse(iso) / 1000 : 0);

/** Request latency: most API calls are milliseconds, a chat answer up to the 110 s ceiling. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const ANSWER_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60, 90, 120];
const PROVIDER_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const CRAWLER_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Prometheus metrics of this process (names and units by Prometheus
 * conventions: `_total` counters, `_seconds`, base units): the default
 * process and Node.js metrics, counters and latency histograms fed by
 * requests and by the event bus, and gauges read from the database at
 * scrape time (so every process behind a load balancer reports the same
 * stored figures). Each instance has its own registry.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #snapshot: () => Promise<MetricsSnapshot>;
  readonly #unsubscribe: (() => void)[] = [];

  readonly #httpRequests: Counter<'method' | 'route' | 'status_code'>;
  readonly #httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly #gauges: {
    paused: Gauge;
    leader: Gauge;
    queueDepth: Gauge<'queue'>;
    answersInProgress: Gauge;
    crawlerEnabled: Gauge;
    crawlerLastSuccess: Gauge;
    crawlerLastFailure: Gauge;
    crawlerConsecutiveFailures: Gauge;
    crawlerHeld: Gauge;
    tokensSpentToday: Gauge;
    tokenBudget: Gauge;
    tokenBudgetExhausted: Gauge;
    sessions: Gauge<'state'>;
    messages: Gauge<'state'>;
    feedback: Gauge<'type'>;
    rateLimitedSessions: Gauge;
  };

  constructor(options: MetricsOptions) {
    this.#snapshot = options.snapshot;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    new Gauge({ name: 'concierge_build_info', help: 'Always 1; the version is a label', labelNames: ['version'], registers }).set({ version: options.version }, 1);

    this.#httpRequests = new Counter({ name: 'concierge_http_requests_total', help: 'HTTP requests answered, by route pattern and status', labelNames: ['method', 'route', 'status_code'], registers });
    this.#httpDuration = new Histogram({
      name: 'concierge_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route pattern and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: HTTP_BUCKETS,
      registers,
    });

    const answers = new Counter({ name: 'concierge_answers_total', help: 'Questions answered or failed, by front and outcome', labelNames: ['source', 'state'], registers });
    const answerDuration = new Histogram({
      name: 'concierge_answer_duration_seconds',
      help: 'Time the assistant took to answer a question, by front and outcome',
      labelNames: ['source', 'state'],
      buckets: ANSWER_BUCKETS,
      registers,
    });
    const tokens = new Counter({ name: 'concierge_assistant_tokens_total', help: 'Assistant tokens used by answers, by kind', labelNames: ['kind'], registers });
    const providerCalls = new Counter({ name: 'concierge_provider_calls_total', help: 'Calls to the assistant provider, by step and outcome', labelNames: ['step', 'outcome'], registers });
    const providerDuration = new Histogram({
      name: 'concierge_provider_call_duration_seconds',
      help: 'Duration of one call to the assistant provider, by step and outcome',
      labelNames: ['step', 'outcome'],
      buckets: PROVIDER_BUCKETS,
      registers,
    });
    const crawlerRuns = new Counter({ name: 'concierge_crawler_runs_total', help: 'Schedule checks by the crawler, by outcome (stored, skipped, failed)', labelNames: ['outcome'], registers });
    const crawlerDuration = new Histogram({ name: 'concierge_crawler_run_duration_seconds', help: 'Duration of one schedule check', labelNames: ['outcome'], buckets: CRAWLER_BUCKETS, registers });

    this.#unsubscribe.push(
      options.events.subscribe('answer', (answer) => {
        const labels = { source: answer.source, state: answer.state };
        answers.inc(labels);
        answerDuration.observe(labels, seconds(answer.processing_duration_ms));
        if (answer.prompt_tokens) tokens.inc({ kind: 'prompt' }, answer.prompt_tokens);
        if (answer.completion_tokens) tokens.inc({ kind: 'completion' }, answer.completion_tokens);
        // This process's answers only: each process is scraped, and Prometheus adds them up.
      }, { thisProcess: true }),
      options.events.subscribe('provider_call', (step, timing) => {
        const labels = { step, outcome: timing.failed ? 'error' : 'success' };
        providerCalls.inc(labels);
        providerDuration.observe(labels, seconds(timing.duration_ms));
      }),
      options.events.subscribe(
        'crawler_run',
        (run) => {
          crawlerRuns.inc({ outcome: run.outcome });
          crawlerDuration.observe({ outcome: run.outcome }, seconds(run.duration_ms));
        },
        { thisProcess: true },
      ),
    );

    const gauge = <L extends string = never>(name: string, help: string, labelNames: L[] = []) => new Gauge<L>({ name, help, labelNames, registers });
    this.#gauges = {
      paused: gauge('concierge_paused', '1 while the bot is paused'),
      leader: gauge('concierge_leader', '1 in the process that runs the background work (ask worker, crawler schedule, clean-up, Discord gateway): one per installation'),
      queueDepth: gauge('concierge_queue_depth', 'Requests waiting for a worker, by queue', ['queue']),
      answersInProgress: gauge('concierge_public_chat_answers_in_progress', 'Public chat questions being answered now (all processes)'),
      crawlerEnabled: gauge('concierge_crawler_enabled', '1 when the crawler runs on its schedule'),
      crawlerLastSuccess: gauge('concierge_crawler_last_success_timestamp_seconds', 'When the crawler last read the schedule successfully (Unix time; 0: never)'),
      crawlerLastFailure: gauge('concierge_crawler_last_failure_timestamp_seconds', 'When a crawler check last failed (Unix time; 0: never)'),
      crawlerConsecutiveFailures: gauge('concierge_crawler_consecutive_failures', 'Failed crawler checks since the last successful one'),
      tokensSpentToday: gauge('concierge_tokens_spent_today', 'Provider tokens spent today (convention day), all processes'),
      tokenBudget: gauge('concierge_token_budget_daily', 'The daily token budget (0: no cap)'),
      tokenBudgetExhausted: gauge('concierge_token_budget_exhausted', '1 once today\'s token budget is spent (the offline assistant answers, or nobody, by config)'),
      crawlerHeld: gauge('concierge_crawler_run_held', '1 while the newest schedule run is held (its events fell by more than half) until an operator forces a refresh'),
      sessions: gauge('concierge_public_chat_sessions', 'Public chat sessions stored, all or active', ['state']),
      messages: gauge('concierge_public_chat_messages', 'Public chat messages stored, by state', ['state']),
      feedback: gauge('concierge_public_chat_feedback', 'Public chat feedback stored, by type', ['type']),
      rateLimitedSessions: gauge('concierge_public_chat_rate_limited_sessions', 'Sessions that ever hit the rate limit'),
    };
  }

  /** Counts one answered HTTP request; `route` is the route pattern, never the raw URL. */
  observeRequest(method: string, route: string, statusCode: number, durationMs: number): void {
    const labels = { method, route, status_code: String(statusCode) };
    this.#httpRequests.inc(labels);
    this.#httpDuration.observe(labels, seconds(durationMs));
  }

  /** The text exposition, with the stored figures read now. */
  async render(): Promise<{ contentType: string; body: string }> {
    const snapshot = await this.#snapshot();
    const g = this.#gauges;
    g.paused.set(snapshot.paused ? 1 : 0);
    g.leader.set(snapshot.leader ? 1 : 0);
    g.queueDepth.set({ queue: 'ask_commands' }, snapshot.queueDepth);
    g.answersInProgress.set(snapshot.public_chat.message_state_counts.processing ?? 0);
    g.crawlerEnabled.set(snapshot.crawler.enabled ? 1 : 0);
    g.crawlerLastSuccess.set(epochSeconds(snapshot.crawler.last_success_at));
    g.crawlerLastFailure.set(epochSeconds(snapshot.crawler.last_failure_at));
    g.crawlerConsecutiveFailures.set(snapshot.crawler.consecutive_failures);
    g.crawlerHeld.set(snapshot.crawler.held_run ? 1 : 0);
    g.tokensSpentToday.set(snapshot.token_budget.spent_today);
    g.tokenBudget.set(snapshot.token_budget.daily_budget);
    g.tokenBudgetExhausted.set(snapshot.token_budget.exhausted ? 1 : 0);
    g.sessions.set({ state: 'all' }, snapshot.public_chat.session_count);
    g.sessions.set({ state: 'active' }, snapshot.public_chat.active_session_count);
    g.messages.reset();
    for (const [state, count] of Object.entries(snapshot.public_chat.message_state_counts)) g.messages.set({ state }, count);
    g.feedback.reset();
    for (const [type, count] of Object.entries(snapshot.public_chat.feedback_type_counts)) g.feedback.set({ type }, count);
    g.rateLimitedSessions.set(snapshot.public_chat.rate_limit_exceeded_count);
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.registry.clear();
  }
}
