import type { PublicChatSession } from '@concierge/contract';
import { Button, Chip } from '@mui/material';
import { useState } from 'react';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, YES_NO_OPTIONS, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  { name: 'session_id', label: 'Session ID', type: 'text' },
  { name: 'client_ip', label: 'Client IP', type: 'text' },
  { name: 'thread_id', label: 'Thread ID', type: 'text' },
  {
    name: 'active',
    label: 'Active',
    type: 'select',
    options: [
      { value: '', label: 'All' },
      { value: 'true', label: 'Active' },
      { value: 'false', label: 'Inactive' },
    ],
  },
  { name: 'has_error', label: 'Has Error', type: 'select', options: YES_NO_OPTIONS },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §4: Error if an error is present, else Active if active, else Inactive. */
function SessionStatus({ session }: { session: PublicChatSession }) {
  if (session.error) return <Chip size="small" color="error" label="Error" />;
  return session.active ? <Chip size="small" color="success" label="Active" /> : <Chip size="small" label="Inactive" />;
}

const COLUMNS: ColumnDef<PublicChatSession>[] = [
  { label: 'ID', render: (row) => row.id, narrow: true },
  { label: 'Session ID', render: (row) => <Truncated text={row.session_id} max={8} />, narrow: true },
  { label: 'Client IP', render: (row) => row.client_ip ?? 'N/A', narrow: true },
  { label: 'Thread ID', render: (row) => <Truncated text={row.thread_id} max={8} />, narrow: true },
  { label: 'Messages', render: (row) => row.message_count, narrow: true },
  { label: 'Tokens', render: (row) => row.total_tokens, narrow: true },
  { label: 'Status', render: (row) => <SessionStatus session={row} />, narrow: true },
  { label: 'First Seen', render: (row) => <DateTime value={row.first_seen_at} />, narrow: true },
  { label: 'Last Seen', render: (row) => <DateTime value={row.last_seen_at} />, narrow: true },
];

/** Public Chat Sessions (SPEC §2); Clear Filters also goes back to newest first. */
export default function SessionsPage() {
  const [selected, setSelected] = useState<PublicChatSession | null>(null);
  return (
    <ListPage<PublicChatSession>
      title="Public Chat Sessions"
      endpoint="/api/public_chat_sessions"
      rowsKey="sessions"
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
          title="Public Chat Session Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Session ID', value: selected.session_id },
            { label: 'Status', value: <SessionStatus session={selected} /> },
            { label: 'Client IP', value: selected.client_ip },
            { label: 'User Agent', value: selected.user_agent },
            { label: 'Referer', value: selected.referer },
            { label: 'Thread ID', value: selected.thread_id },
            { label: 'Messages', value: selected.message_count },
            { label: 'Total Tokens', value: selected.total_tokens },
            { label: 'Verified', value: selected.verified ? 'yes' : 'no' },
            { label: 'First Seen', value: <DateTime value={selected.first_seen_at} /> },
            { label: 'Last Seen', value: <DateTime value={selected.last_seen_at} /> },
            { label: 'Expires', value: <DateTime value={selected.expires_at} /> },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
            { label: 'Error', value: selected.error, error: true },
          ]}
        />
      )}
    </ListPage>
  );
}
