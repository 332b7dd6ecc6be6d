import { Alert, Box, Card, CardContent, Skeleton, Table, TableBody, TableCell, TableRow, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { api, describeHttpError } from '../../api/client.ts';
import { Page } from '../../app/Layout.tsx';
import { DateTime } from '../../components/DateTime.tsx';

interface BotStatus {
  paused: boolean;
  pause_count: number;
  resume_count: number;
  users_seen: number;
  current_requests_queued: number;
  uptime: string;
  warnings?: string[];
  openai: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    retrieve_run: number;
    create_message: number;
    create_thread: number;
    create_run: number;
    list_message: number;
    run_status: Record<string, number>;
  };
  api_requests: Record<string, number>;
  /** The Discord bot: counters every server process shares, and how its gateway is. */
  discord?: {
    messages_handled: number;
    connects: number;
    disconnects: number;
    configured?: boolean;
    connected?: boolean;
    state?: string;
    reason?: string | null;
    connected_at?: string | null;
  };
  crawler: {
    enabled: boolean;
    last_run: string | null;
    runs_triggered: number;
    last_success_at?: string | null;
    last_failure_at?: string | null;
    consecutive_failures?: number;
    last_error?: string | null;
    held_run?: { id: number; event_count: number; warning: string | null; created_at: string } | null;
  };
  reports: Record<string, number>;
  /** The spending cap: provider tokens spent today against the daily budget (0 = no cap). */
  token_budget?: { day: string; daily_budget: number; spent_today: number; exhausted: boolean; action: 'offline' | 'pause' };
  retention?: {
    messages_days: number;
    client_ip_days: number;
    call_bodies_days: number;
    crawler_runs_kept: number;
    last_pass: {
      at: string;
      messages_deleted: number;
      sessions_deleted: number;
      client_ip_rows_scrubbed: number;
      call_bodies_cleared: number;
      crawler_events_deleted: number;
    } | null;
  };
  public_chat?: {
    session_count: number;
    active_session_count: number;
    unique_thread_count: number;
    unique_client_ip_count: number;
    rate_limit_exceeded_count: number;
    message_count: number;
    message_error_count: number;
    messages_today: number;
    sessions_today: number;
    new_sessions_today: number;
    total_prompt_tokens: number;
    total_completion_tokens: number;
    total_tokens: number;
    average_session_duration_minutes: number;
    average_processing_time_ms: number;
    feedback_count: number;
    message_state_counts: Record<string, number>;
    run_status_counts: Record<string, number>;
    feedback_type_counts: Record<string, number>;
  };
}

const yesNo = (value: boolean) => (value ? 'yes' : 'no');
const n = (value: number) => value.toLocaleString();

function StatusTable({ title, rows }: { title: string; rows: [string, ReactNode][] }) {
  return (
    <Card>
      <CardContent>
        <Typography variant="h2" component="h2" gutterBottom>
          {title}
        </Typography>
        {rows.length === 0 ? (
          <Typography color="text.secondary">None yet</Typography>
        ) : (
          <Table size="small" aria-label={title}>
            <TableBody>
              {rows.map(([label, value]) => (
                <TableRow key={label}>
                  <TableCell component="th" scope="row" sx={{ fontWeight: 600, width: '60%', wordBreak: 'break-word' }}>
                    {label}
                  </TableCell>
                  <TableCell>{value}</TableCell>
                </TableRow>
              ))}
            </TableBody>
          </Table>
        )}
      </CardContent>
    </Card>
  );
}

const days = (value: number) => (value === 0 ? 'kept for ever' : `${n(value)} day${value === 1 ? '' : 's'}`);

function retentionRows(retention: NonNullable<BotStatus['retention']>): [string, ReactNode][] {
  const pass = retention.last_pass;
  return [
    ['Chat messages', days(retention.messages_days)],
    ['Client addresses', days(retention.client_ip_days)],
    ['AI call bodies', days(retention.call_bodies_days)],
    ['Crawler events', retention.crawler_runs_kept === 0 ? 'all runs' : `last ${n(retention.crawler_runs_kept)} runs`],
    ['Last clean-up', pass ? <DateTime value={pass.at} /> : 'not yet'],
    ...(pass
      ? ([
          [
            'It removed',
            [
              `${n(pass.messages_deleted)} messages`,
              `${n(pass.sessions_deleted)} sessions`,
              `${n(pass.client_ip_rows_scrubbed)} addresses`,
              `${n(pass.call_bodies_cleared)} call bodies`,
              `${n(pass.crawler_events_deleted)} crawler events`,
            ].join(', '),
          ],
        ] as [string, ReactNode][])
      : []),
  ];
}

const GATEWAY_STATES: Record<string, string> = {
  connected: 'Connected',
  connecting: 'Connecting…',
  reconnecting: 'Reconnecting…',
  failed: 'Cannot connect',
  off: 'Not connected',
};

function discordRows(discord: NonNullable<BotStatus['discord']>): [string, ReactNode][] {
  const state = discord.state ?? (discord.connected ? 'connected' : 'off');
  const color = state === 'connected' ? 'success.main' : state === 'failed' ? 'error.main' : 'text.primary';
  return [
    [
      'Gateway',
      <Typography key="gateway" component="span" variant="body2" sx={{ fontWeight: 600, color }} data-testid="discord-gateway">
        {GATEWAY_STATES[state] ?? state}
      </Typography>,
    ],
    ...(discord.reason
      ? ([['Why', <Typography key="why" component="span" variant="body2" color={state === 'failed' ? 'error' : 'text.secondary'} sx={{ wordBreak: 'break-word' }}>{discord.reason}</Typography>]] as [string, ReactNode][])
      : []),
    ...(discord.connected ? ([['Connected since', <DateTime value={discord.connected_at ?? null} />]] as [string, ReactNode][]) : []),
    ['Connects', n(discord.connects)],
    ['Disconnects', n(discord.disconnects)],
    ['Messages handled', n(discord.messages_handled)],
  ];
}

const entries = (map: Record<string, number>) => Object.entries(map).map(([key, value]): [string, ReactNode] => [key, n(value)]);

/** System Status (SPEC §2): skeleton while loading, the raw error text on failure. */
export default function StatusPage() {
  const query = useQuery({ queryKey: ['status'], queryFn: () => api.get<BotStatus>('/api/status'), refetchInterval: 15_000 });

  return (
    <Page>
      <Typography variant="h1" component="h1" sx={{ mb: 2 }}>
        System Status
      </Typography>
      {query.isPending ? (
        <Box aria-busy="true" aria-label="Loading status" sx={{ display: 'grid', gap: 2, gridTemplateColumns: { xs: '1fr', md: '1fr 1fr' } }}>
          {[0, 1, 2, 3].map((index) => (
            <Skeleton key={index} variant="rounded" height={220} />
          ))}
        </Box>
      ) : query.isError ? (
        <Typography component="pre" role="alert" sx={{ color: 'error.main', whiteSpace: 'pre-wrap' }}>
          {describeHttpError(query.error)}
        </Typography>
      ) : (
        <StatusTables status={query.data} />
      )}
    </Page>
  );
}

function StatusTables({ status }: { status: BotStatus }) {
  const chat = status.public_chat;
  return (
    <>
      {status.warnings?.map((warning) => (
        <Alert key={warning} severity="warning" sx={{ mb: 2 }}>
          {warning}
        </Alert>
      ))}
      {status.token_budget?.exhausted && (
        <Alert severity="warning" sx={{ mb: 2 }} data-testid="budget-spent">
          Today's token budget is spent ({n(status.token_budget.spent_today)} of {n(status.token_budget.daily_budget)} tokens):{' '}
          {status.token_budget.action === 'pause'
            ? 'nobody is answered until midnight (convention time) or until the budget is raised on the Config screen.'
            : 'the offline assistant answers until midnight (convention time) or until the budget is raised on the Config screen.'}
        </Alert>
      )}
      {status.crawler.held_run && (
        <Alert severity="warning" sx={{ mb: 2 }} data-testid="held-run">
          Schedule run {status.crawler.held_run.id} is held: {status.crawler.held_run.warning ?? `${status.crawler.held_run.event_count} events`} Force it on the
          Commands screen once the feed is right.
        </Alert>
      )}
      <Box sx={{ display: 'grid', gap: 2, gridTemplateColumns: { xs: '1fr', md: '1fr 1fr' }, alignItems: 'start' }}>
        <StatusTable
          title="General"
          rows={[
            ['Paused', yesNo(status.paused)],
            ['Pause count', n(status.pause_count)],
            ['Resume count', n(status.resume_count)],
            ['Users seen', n(status.users_seen)],
            ['Queued requests', n(status.current_requests_queued)],
            ['Uptime', status.uptime],
          ]}
        />
        {status.discord && <StatusTable title="Discord" rows={discordRows(status.discord)} />}
        <StatusTable
          title="OpenAI"
          rows={[
            ['Prompt tokens', n(status.openai.prompt_tokens)],
            ['Completion tokens', n(status.openai.completion_tokens)],
            ['Total tokens', n(status.openai.total_tokens)],
            ['Retrieve run', n(status.openai.retrieve_run)],
            ['Create message', n(status.openai.create_message)],
            ['Create thread', n(status.openai.create_thread)],
            ['List message', n(status.openai.list_message)],
            ...(status.token_budget
              ? ([
                  ['Tokens spent today', n(status.token_budget.spent_today)],
                  ['Daily token budget', status.token_budget.daily_budget > 0 ? `${n(status.token_budget.daily_budget)} (then ${status.token_budget.action})` : 'no cap'],
                ] as [string, ReactNode][])
              : []),
            ...entries(status.openai.run_status).map(([key, value]): [string, ReactNode] => [`Run status: ${key}`, value]),
          ]}
        />
        <StatusTable title="API requests" rows={entries(status.api_requests)} />
        <Box sx={{ display: 'grid', gap: 2 }}>
          <StatusTable
            title="Crawler"
            rows={[
              ['Enabled', yesNo(status.crawler.enabled)],
              ['Last run', <DateTime value={status.crawler.last_run} />],
              ['Runs triggered', n(status.crawler.runs_triggered)],
              ['Last success', <DateTime value={status.crawler.last_success_at ?? null} />],
              ['Last failure', <DateTime value={status.crawler.last_failure_at ?? null} />],
              [
                'Failures in a row',
                <Typography key="failures" component="span" variant="body2" color={status.crawler.consecutive_failures ? 'error' : undefined}>
                  {n(status.crawler.consecutive_failures ?? 0)}
                </Typography>,
              ],
              ...(status.crawler.consecutive_failures && status.crawler.last_error
                ? [['Last error', <Typography key="error" component="span" variant="body2" color="error" sx={{ wordBreak: 'break-word' }}>{status.crawler.last_error}</Typography>] as [string, ReactNode]]
                : []),
              ['Held run', status.crawler.held_run ? `#${status.crawler.held_run.id} (${n(status.crawler.held_run.event_count)} events)` : 'no'],
            ]}
          />
          <StatusTable title="Reports" rows={entries(status.reports)} />
          {status.retention && <StatusTable title="Retention" rows={retentionRows(status.retention)} />}
        </Box>
        {chat && (
          <StatusTable
            title="Public chat"
            rows={[
              ['Total sessions', n(chat.session_count)],
              ['Active sessions', n(chat.active_session_count)],
              ['Unique threads', n(chat.unique_thread_count)],
              ['Unique client IPs', n(chat.unique_client_ip_count)],
              ['Rate limited sessions', n(chat.rate_limit_exceeded_count)],
              ['Total messages', n(chat.message_count)],
              ['Message errors', n(chat.message_error_count)],
              ['Messages today', n(chat.messages_today)],
              ['Sessions today', n(chat.sessions_today)],
              ['New sessions today', n(chat.new_sessions_today)],
              ['Prompt tokens', n(chat.total_prompt_tokens)],
              ['Completion tokens', n(chat.total_completion_tokens)],
              ['Total tokens', n(chat.total_tokens)],
              ['Average session duration (minutes)', chat.average_session_duration_minutes.toFixed(2)],
              ['Average processing time (ms)', chat.average_processing_time_ms.toFixed(0)],
              ['Feedback', n(chat.feedback_count)],
            ]}
          />
        )}
        {chat && (
          <Box sx={{ display: 'grid', gap: 2 }}>
            <StatusTable title="Message states" rows={entries(chat.message_state_counts)} />
            <StatusTable title="Run statuses" rows={entries(chat.run_status_counts)} />
            <StatusTable title="Feedback types" rows={entries(chat.feedback_type_counts)} />
          </Box>
        )}
      </Box>
    </>
  );
}
