import { PROVIDER_LOG_KINDS, type ProviderLog, type ProviderLogKind } from '@concierge/contract';
import { Button } from '@mui/material';
import { useState } from 'react';
import { useLocation } from 'react-router';
import { prettyJson } from '../../components/format.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, YES_NO_OPTIONS, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { ErrorSuccessChip } from '../../components/StatusChip.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  {
    name: 'origin',
    label: 'Origin',
    type: 'select',
    // The server shows the public chat's calls when no origin is given.
    options: [
      { value: '', label: 'Public Chat' },
      { value: 'ask_command', label: 'Discord (Ask Commands)' },
      { value: 'all', label: 'All' },
    ],
  },
  { name: 'session_id', label: 'Session ID', type: 'text' },
  { name: 'message_id', label: 'Message ID', type: 'text' },
  { name: 'ask_command_id', label: 'Ask Command ID', type: 'text' },
  { name: 'client_ip', label: 'Client IP', type: 'text' },
  { name: 'has_error', label: 'Has Error', type: 'select', options: YES_NO_OPTIONS },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §5: end − start in ms, or N/A when the end is not after the start. */
export function logDuration(log: Pick<ProviderLog, 'request_started' | 'request_ended'>): string {
  if (!log.request_ended) return 'N/A';
  const ms = Date.parse(log.request_ended) - Date.parse(log.request_started);
  return ms > 0 ? `${ms} ms` : 'N/A';
}

const COLUMNS: ColumnDef<ProviderLog>[] = [
  { label: 'ID', render: (row) => row.id, narrow: true },
  { label: 'Session ID', render: (row) => <Truncated text={row.session_id} max={8} />, narrow: true },
  { label: 'Message ID', render: (row) => row.public_chat_message_id ?? (row.ask_command_id ? `Ask #${row.ask_command_id}` : 'N/A'), narrow: true },
  { label: 'Client IP', render: (row) => row.client_ip ?? 'N/A', narrow: true },
  { label: 'Duration', render: (row) => logDuration(row), narrow: true },
  { label: 'Status', render: (row) => <ErrorSuccessChip error={row.error} />, narrow: true },
  { label: 'Created', render: (row) => <DateTime value={row.created_at} />, narrow: true },
];

/** The five AI call log screens, one shared page; the route says which log (SPEC §2). */
export default function ProviderLogsPage() {
  const { pathname } = useLocation();
  const kind = pathname.replace(/^.*public_chat_openai_/, '') as ProviderLogKind;
  const [selected, setSelected] = useState<ProviderLog | null>(null);
  return (
    <ListPage<ProviderLog>
      key={kind}
      title={PROVIDER_LOG_KINDS[kind] ?? 'OpenAI Logs'}
      endpoint={`/api/public_chat_openai_${kind}`}
      rowsKey="logs"
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
          title="OpenAI Log Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Session ID', value: selected.session_id },
            { label: 'Message ID', value: selected.public_chat_message_id },
            { label: 'Ask Command ID', value: selected.ask_command_id },
            { label: 'Client IP', value: selected.client_ip },
            { label: 'User Agent', value: selected.user_agent },
            { label: 'Request Started', value: <DateTime value={selected.request_started} /> },
            { label: 'Request Ended', value: <DateTime value={selected.request_ended} /> },
            { label: 'Duration', value: logDuration(selected) },
            { label: 'Status', value: <ErrorSuccessChip error={selected.error} /> },
            { label: 'Request Body', value: prettyJson(selected.request_body), pre: true },
            { label: 'Response Body', value: prettyJson(selected.response_body), pre: true },
            { label: 'Response Headers', value: prettyJson(selected.response_headers), pre: true },
            { label: 'Error', value: selected.error, error: true },
          ]}
        />
      )}
    </ListPage>
  );
}
