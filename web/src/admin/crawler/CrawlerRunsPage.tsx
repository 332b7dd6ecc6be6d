import type { CrawlerRun, ScheduleChangeRow } from '@concierge/contract';
import { Box, Button, Chip, List, ListItem, ListItemText, Stack, Typography } from '@mui/material';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { DateTime } from '../../components/DateTime.tsx';
import { formatDateTime } from '../../components/format.ts';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, YES_NO_OPTIONS, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { ErrorSuccessChip } from '../../components/StatusChip.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  { name: 'url', label: 'URL', type: 'text' },
  { name: 'hash', label: 'Hash', type: 'text' },
  { name: 'has_error', label: 'Has Error', type: 'select', options: YES_NO_OPTIONS },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

const COLUMNS: ColumnDef<CrawlerRun>[] = [
  { label: 'ID', render: (run) => run.id, narrow: true },
  { label: 'URL', render: (run) => <Truncated text={run.url} max={30} /> },
  { label: 'Hash', render: (run) => <Truncated text={run.hash} max={8} />, narrow: true },
  {
    label: 'Status',
    render: (run) => (run.held && !run.error ? <Chip size="small" color="warning" label="Held" title={run.warning ?? undefined} /> : <ErrorSuccessChip error={run.error} />),
    narrow: true,
  },
  { label: 'File', render: (run) => <Truncated text={run.file} max={15} /> },
  { label: 'Tracks', render: (run) => <Truncated text={run.tracks} max={20} /> },
  { label: 'Events', render: (run) => run.event_count, narrow: true },
  { label: 'Speakers', render: (run) => run.speaker_count, narrow: true },
  { label: 'Created', render: (run) => <DateTime value={run.created_at} />, narrow: true },
];

const CHANGE_LABEL: Record<ScheduleChangeRow['kind'], string> = {
  added: 'Added',
  removed: 'Removed',
  moved_time: 'Moved (time)',
  moved_room: 'Moved (room)',
  cancelled: 'Cancelled',
  reinstated: 'Back on',
};

function describePlacement(placement: ScheduleChangeRow['after']): string {
  if (!placement) return '';
  return `${formatDateTime(placement.start)}${placement.location ? ` · ${placement.location}` : ''}`;
}

/** Crawler Runs (SPEC §2): every schedule refresh, with what changed. */
export default function CrawlerRunsPage() {
  const [selected, setSelected] = useState<CrawlerRun | null>(null);
  const navigate = useNavigate();
  const viewEvents = (run: CrawlerRun) => void navigate(`/admin/crawler_events?crawler_run_id=${run.id}`);

  return (
    <ListPage<CrawlerRun>
      title="Crawler Runs"
      endpoint="/api/crawler_runs"
      rowsKey="crawler_runs"
      filters={FILTERS}
      columns={COLUMNS}
      actions={(run) => (
        <Stack spacing={0.5} sx={{ alignItems: 'flex-start' }}>
          <Button size="small" onClick={() => setSelected(run)}>
            Details
          </Button>
          <Button size="small" onClick={() => viewEvents(run)}>
            View Events
          </Button>
        </Stack>
      )}
    >
      {selected && (
        <DetailsDialog
          open
          title="Crawler Run Details"
          onClose={() => setSelected(null)}
          actions={
            <Button variant="contained" onClick={() => viewEvents(selected)}>
              View Events
            </Button>
          }
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'URL', value: selected.url },
            { label: 'Hash', value: selected.hash },
            { label: 'Status', value: <ErrorSuccessChip error={selected.error} /> },
            { label: 'File', value: selected.file },
            { label: 'Tracks', value: selected.tracks },
            { label: 'Events', value: selected.event_count },
            { label: 'Speakers', value: selected.speaker_count },
            { label: 'Format', value: selected.format },
            { label: 'Time Zone', value: selected.time_zone },
            { label: 'Forced', value: selected.forced ? 'yes' : 'no' },
            { label: 'Duration', value: selected.duration_ms === null ? null : `${selected.duration_ms} ms` },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
            { label: 'Error', value: selected.error, error: true },
          ]}
        >
          <Box sx={{ mt: 2 }}>
            <Typography variant="h6" component="h3" gutterBottom>
              Changes since the previous run
            </Typography>
            {selected.changes.length === 0 ? (
              <Typography color="text.secondary">No changes.</Typography>
            ) : (
              <List dense disablePadding>
                {selected.changes.map((change) => (
                  <ListItem key={`${change.kind}-${change.uid}`} disableGutters>
                    <ListItemText
                      primary={`${CHANGE_LABEL[change.kind]}: ${change.title}`}
                      secondary={[change.before && `was ${describePlacement(change.before)}`, change.after && `now ${describePlacement(change.after)}`]
                        .filter(Boolean)
                        .join(' → ')}
                    />
                  </ListItem>
                ))}
              </List>
            )}
          </Box>
        </DetailsDialog>
      )}
    </ListPage>
  );
}
