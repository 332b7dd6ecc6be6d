import { ASK_COMMAND_STATES, type AskCommand } from '@concierge/contract';
import { Button } from '@mui/material';
import { useState } from 'react';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, YES_NO_OPTIONS, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const yesNo = (value: boolean) => (value ? 'yes' : 'no');

/** The ask pipeline's filters (user, state, whisper, dates, order). */
const FILTERS: FilterDef[] = [
  { name: 'user_id', label: 'User ID', type: 'text' },
  { name: 'state', label: 'State', type: 'select', options: [{ value: '', label: 'All' }, ...ASK_COMMAND_STATES.map((state) => ({ value: state, label: state }))] },
  { name: 'whisper', label: 'Whisper', type: 'select', options: YES_NO_OPTIONS },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §2 "Ask Commands list": prompt and response cut at 50 with the whole text on hover, N/A when empty. */
const COLUMNS: ColumnDef<AskCommand>[] = [
  { label: 'ID', render: (row) => row.id, narrow: true },
  { label: 'Username', render: (row) => row.user.username, narrow: true },
  { label: 'Prompt', render: (row) => <Truncated text={row.prompt} max={50} />, wide: true },
  { label: 'Response', render: (row) => <Truncated text={row.response} max={50} />, wide: true },
  { label: 'State', render: (row) => row.state, narrow: true },
];

/** Ask Commands (SPEC §2): every /ask and /whisper, newest first, with all of a command's fields in its details. */
export default function AskCommandsPage() {
  const [selected, setSelected] = useState<AskCommand | null>(null);
  return (
    <ListPage<AskCommand>
      title="Ask Commands"
      endpoint="/api/ask_commands"
      filters={FILTERS}
      columns={COLUMNS}
      actions={(row) => (
        <Button size="small" onClick={() => setSelected(row)}>
          View Details
        </Button>
      )}
    >
      {selected && (
        <DetailsDialog
          open
          title="Ask Command Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'User', value: `${selected.user.username}${selected.user.global_name ? ` (${selected.user.global_name})` : ''}` },
            { label: 'User ID', value: selected.user_id },
            { label: 'Type', value: selected.type },
            { label: 'Whisper', value: yesNo(selected.whisper) },
            { label: 'Priority', value: yesNo(selected.priority) },
            { label: 'State', value: selected.state },
            { label: 'Step', value: selected.step },
            { label: 'Prompt', value: selected.prompt, pre: true },
            { label: 'Response', value: selected.response, pre: true },
            { label: 'Error', value: selected.error, error: true },
            { label: 'Attempts', value: selected.attempts },
            { label: 'Thread ID', value: selected.thread_id },
            { label: 'Message ID', value: selected.message_id },
            { label: 'Run ID', value: selected.run_id },
            { label: 'Run Status', value: selected.run_status },
            { label: 'Prompt Tokens', value: selected.prompt_tokens },
            { label: 'Completion Tokens', value: selected.completion_tokens },
            { label: 'Total Tokens', value: selected.total_tokens },
            { label: 'Processing Duration ms', value: selected.processing_duration_ms },
            { label: 'Interaction ID', value: selected.interaction_id },
            { label: 'Discord Message ID', value: selected.discord_message_id },
            { label: 'Application ID', value: selected.application_id },
            { label: 'Guild ID', value: selected.guild_id },
            { label: 'Channel ID', value: selected.channel_id },
            { label: 'Context', value: selected.context },
            { label: 'Content', value: selected.content },
            { label: 'Custom ID', value: selected.custom_id },
            { label: 'Acknowledged', value: yesNo(selected.acknowledged) },
            { label: 'Feedback disabled', value: feedbackFlags(selected, 'disable') },
            { label: 'Feedback shown', value: feedbackFlags(selected, 'show') },
            { label: 'Show Undo', value: yesNo(selected.show_undo) },
            { label: 'Token Expires', value: <DateTime value={selected.token_expires} /> },
            { label: 'Started', value: <DateTime value={selected.started_at} /> },
            { label: 'Finished', value: <DateTime value={selected.finished_at} /> },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
          ]}
        />
      )}
    </ListPage>
  );
}

/** The per-type feedback flags (good, outdated, hallucinated, other) that are on, or none. */
function feedbackFlags(command: AskCommand, kind: 'disable' | 'show'): string {
  const on = (['good', 'outdated', 'hallucinated', 'other'] as const).filter((type) => command[`${kind}_${type}`]);
  return on.length ? on.join(', ') : 'none';
}
