import type { RateLimit } from '@concierge/contract';
import { Button, Chip } from '@mui/material';
import { useState } from 'react';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, YES_NO_OPTIONS, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  { name: 'identifier', label: 'Identifier', type: 'text' },
  { name: 'client_ip', label: 'Client IP', type: 'text' },
  { name: 'limited', label: 'Limited', type: 'select', options: YES_NO_OPTIONS },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §5: rounded request_count / max_requests × 100, or 0 when max_requests is not above 0. */
export const usagePercent = (row: Pick<RateLimit, 'request_count' | 'max_requests'>) =>
  row.max_requests > 0 ? Math.round((row.request_count / row.max_requests) * 100) : 0;

function UsageChip({ row }: { row: RateLimit }) {
  const usage = usagePercent(row);
  return <Chip size="small" color={usage >= 80 ? 'warning' : 'default'} label={`${usage}%`} />;
}

const LimitedChip = ({ limited }: { limited: boolean }) =>
  limited ? <Chip size="small" color="error" label="Limited" /> : <Chip size="small" color="success" label="OK" />;

const COLUMNS: ColumnDef<RateLimit>[] = [
  { label: 'ID', render: (row) => row.id, narrow: true },
  { label: 'Identifier', render: (row) => <Truncated text={row.identifier} max={12} />, narrow: true },
  { label: 'Client IP', render: (row) => row.client_ip ?? 'N/A', narrow: true },
  { label: 'Requests', render: (row) => `${row.request_count} / ${row.max_requests}`, narrow: true },
  { label: 'Usage %', render: (row) => <UsageChip row={row} />, narrow: true },
  { label: 'Status', render: (row) => <LimitedChip limited={row.limited} />, narrow: true },
  { label: 'Window Start', render: (row) => <DateTime value={row.window_start} />, narrow: true },
  { label: 'Window End', render: (row) => <DateTime value={row.window_end} />, narrow: true },
];

/** Public Chat Rate Limits (SPEC §2). */
export default function RateLimitsPage() {
  const [selected, setSelected] = useState<RateLimit | null>(null);
  return (
    <ListPage<RateLimit>
      title="Public Chat Rate Limits"
      endpoint="/api/public_chat_rate_limits"
      rowsKey="rate_limits"
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
          title="Rate Limit Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Identifier', value: selected.identifier },
            { label: 'Client IP', value: selected.client_ip },
            { label: 'Requests', value: `${selected.request_count} / ${selected.max_requests}` },
            { label: 'Usage %', value: <UsageChip row={selected} /> },
            { label: 'Status', value: <LimitedChip limited={selected.limited} /> },
            { label: 'Limited At', value: <DateTime value={selected.limited_at} /> },
            { label: 'Window Start', value: <DateTime value={selected.window_start} /> },
            { label: 'Window End', value: <DateTime value={selected.window_end} /> },
            { label: 'Notes', value: selected.notes },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
          ]}
        />
      )}
    </ListPage>
  );
}
