import type { CrawlerEvent } from '@concierge/contract';
import ArrowBack from '@mui/icons-material/ArrowBack';
import { Button, Chip } from '@mui/material';
import { useState } from 'react';
import { Link as RouterLink, useSearchParams } from 'react-router';
import { formatDuration } from '../../components/format.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';
import { trackColour } from './track-colour.ts';

const FILTERS: FilterDef[] = [
  { name: 'track', label: 'Track', type: 'text' },
  { name: 'title', label: 'Title', type: 'text' },
  { name: 'location', label: 'Location', type: 'text' },
  { name: 'speakers', label: 'Speakers', type: 'text' },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

function TrackChip({ track }: { track: string | null }) {
  if (!track) return <>N/A</>;
  return <Chip size="small" label={track} sx={{ bgcolor: trackColour(track), color: '#fff', fontWeight: 600 }} />;
}

const COLUMNS: ColumnDef<CrawlerEvent>[] = [
  { label: 'ID', render: (event) => event.id, narrow: true },
  { label: 'Track', render: (event) => <TrackChip track={event.track} />, narrow: true },
  { label: 'Title', render: (event) => (event.status === 'cancelled' ? `${event.what} (cancelled)` : event.what) },
  { label: 'Duration', render: (event) => formatDuration(event.duration), narrow: true },
  { label: 'Location', render: (event) => event.where ?? 'N/A' },
  { label: 'Speakers', render: (event) => <Truncated text={event.speakers} max={40} /> },
  { label: 'Start Time', render: (event) => <DateTime value={event.start_at} />, narrow: true },
];

/** Crawler Events (SPEC §2): the events a run found; `?crawler_run_id=` narrows to one run. */
export default function CrawlerEventsPage() {
  const [selected, setSelected] = useState<CrawlerEvent | null>(null);
  const [params] = useSearchParams();
  const runId = params.get('crawler_run_id');

  return (
    <ListPage<CrawlerEvent>
      title={runId ? `Crawler Events — Run #${runId}` : 'Crawler Events'}
      endpoint="/api/crawler_events"
      rowsKey="crawler_events"
      filters={FILTERS}
      fixedParams={['crawler_run_id']}
      columns={COLUMNS}
      headerActions={
        <Button component={RouterLink} to="/admin/crawler_runs" startIcon={<ArrowBack />}>
          Back to Crawler Runs
        </Button>
      }
      actions={(event) => (
        <Button size="small" onClick={() => setSelected(event)}>
          Details
        </Button>
      )}
    >
      {selected && (
        <DetailsDialog
          open
          title="Event Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Crawler Run', value: selected.crawler_run_id },
            { label: 'Title', value: selected.what },
            { label: 'Track', value: <TrackChip track={selected.track} /> },
            { label: 'When', value: selected.when },
            { label: 'Date', value: selected.date },
            { label: 'Start', value: <DateTime value={selected.start_at} /> },
            { label: 'End', value: <DateTime value={selected.end_at} /> },
            { label: 'Duration', value: formatDuration(selected.duration) },
            { label: 'Location', value: selected.where },
            { label: 'Speakers', value: selected.speakers },
            { label: 'Status', value: selected.status },
            { label: 'Description', value: selected.description, pre: true },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
          ]}
        />
      )}
    </ListPage>
  );
}
