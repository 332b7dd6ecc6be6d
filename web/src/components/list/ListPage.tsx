import {
  Box,
  Button,
  Card,
  MenuItem,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableContainer,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material';
import type { SxProps, Theme } from '@mui/material';
import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { api } from '../../api/client.ts';
import { Page } from '../../app/Layout.tsx';

/** SPEC §9: 25 rows a page; Load More adds 25 to the offset. */
export const PAGE_SIZE = 25;

export type FilterDef =
  | { name: string; label: string; type: 'text' }
  | { name: string; label: string; type: 'datetime' }
  | { name: string; label: string; type: 'select'; options: { value: string; label: string }[] };

export interface ColumnDef<Row> {
  label: string;
  render: (row: Row) => ReactNode;
  /** Keeps the column narrow (ids, counts, chips). */
  narrow?: boolean;
  /** Gives the column room (long text such as a question or an answer). */
  wide?: boolean;
}

export const ORDER_FILTER: FilterDef = {
  name: 'order',
  label: 'Order',
  type: 'select',
  options: [
    { value: 'desc', label: 'Newest First' },
    { value: 'asc', label: 'Oldest First' },
  ],
};

export const YES_NO_OPTIONS = [
  { value: '', label: 'All' },
  { value: 'true', label: 'Yes' },
  { value: 'false', label: 'No' },
];

export interface ListPageProps<Row extends { id: number }> {
  title: ReactNode;
  /** The list endpoint, e.g. /api/crawler_runs. */
  endpoint: string;
  /** Where the rows are in the reply, e.g. crawler_runs; absent when the reply is the array itself (ask commands, Discord messages). */
  rowsKey?: string;
  filters: FilterDef[];
  columns: ColumnDef<Row>[];
  /** Buttons for a row's Actions cell. */
  actions: (row: Row) => ReactNode;
  /** Query values that are not filters on this page (kept from the URL, e.g. crawler_run_id). */
  fixedParams?: string[];
  headerActions?: ReactNode;
  /** Dialogs the page opens, rendered once. */
  children?: ReactNode;
}

/** Filter values as the URL holds them; empty values are left out. */
function filtersFromUrl(params: URLSearchParams, names: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = params.get(name);
    if (value) values[name] = value;
  }
  return values;
}

/** datetime-local gives "2026-03-14T15:00"; the server reads a value without a zone in the convention's zone. */
const toQueryValue = (filter: FilterDef | undefined, value: string) => (filter?.type === 'datetime' ? value : value.trim());

/**
 * On phones each row becomes a card of "label  value" lines instead of a
 * table wider than the screen: every column stays readable without
 * scrolling sideways.
 */
export const STACK_ON_PHONES: SxProps<Theme> = (theme) => ({
  [theme.breakpoints.down('sm')]: {
    '& thead': { display: 'none' },
    '& tbody tr': { display: 'block', py: 1, borderBottom: 1, borderColor: 'divider' },
    '& tbody tr:last-of-type': { borderBottom: 0 },
    '& tbody td': {
      display: 'flex',
      justifyContent: 'space-between',
      alignItems: 'center',
      gap: 2,
      border: 0,
      py: 0.5,
      minWidth: 0,
      whiteSpace: 'normal',
      textAlign: 'right',
      overflowWrap: 'anywhere',
    },
    '& tbody td[data-label]::before': {
      content: 'attr(data-label)',
      fontWeight: 700,
      textAlign: 'left',
      whiteSpace: 'nowrap',
    },
  },
});

/**
 * The one list screen every monitoring list uses (SPEC §2 "Shared list
 * behaviour"): filters kept in the URL (so a reload or a shared link shows
 * the same list), empty filters left out of the request, 'Loading...' on the
 * first load, Load More while pages come back full, and any change of filter
 * starting again from the first page.
 */
export function ListPage<Row extends { id: number }>(props: ListPageProps<Row>) {
  const { endpoint, rowsKey, filters, columns, actions } = props;
  const [searchParams, setSearchParams] = useSearchParams();
  const queryClient = useQueryClient();
  /**
   * The URL this form's own Apply or Clear went to, and the draft it sent.
   * The router moves to the new URL a moment later (in a transition, which
   * a busy phone can hold back while the user goes on typing), so the
   * draft follows the URL only when nothing was typed since: Clear then
   * straight away a date keeps the date. Any other change of URL (back,
   * forward, a link) replaces the draft with the URL's filters.
   */
  const ownNavigation = useRef<{ search: string; draft: Record<string, string> } | null>(null);
  /**
   * A change of filter starts again from the first page (SPEC §2), even back
   * to filters seen before: their cached pages (and Load More offset) go.
   * The list on screen is left alone until the new one replaces it.
   */
  const showFromFirstPage = (next: URLSearchParams, draftSent: Record<string, string>) => {
    queryClient.removeQueries({ queryKey: ['list', endpoint], type: 'inactive' });
    ownNavigation.current = { search: next.toString(), draft: draftSent };
    setSearchParams(next);
  };
  // Keyed by content, so callers may pass fresh arrays on every render.
  const namesKey = filters.map((filter) => filter.name).join(',');
  const fixedKey = (props.fixedParams ?? []).join(',');
  const names = useMemo(() => (namesKey ? namesKey.split(',') : []), [namesKey]);
  const fixedParams = useMemo(() => (fixedKey ? fixedKey.split(',') : []), [fixedKey]);
  const searchKey = searchParams.toString();
  const applied = useMemo(() => filtersFromUrl(new URLSearchParams(searchKey), [...names, ...fixedParams]), [searchKey, names, fixedParams]);
  const [draft, setDraft] = useState<Record<string, string>>(applied);
  // On phones the filters fold away behind a button.
  const [filtersOpen, setFiltersOpen] = useState(false);
  const activeCount = Object.keys(applied).filter((name) => names.includes(name) && name !== 'order').length;
  useEffect(() => {
    const own = ownNavigation.current;
    ownNavigation.current = null;
    const typedSince = (current: Record<string, string>) => own !== null && own.search === searchKey && current !== own.draft;
    setDraft((current) => (typedSince(current) ? current : applied));
  }, [applied, searchKey]);

  const query = useInfiniteQuery({
    queryKey: ['list', endpoint, applied],
    initialPageParam: 0,
    queryFn: async ({ pageParam }) => {
      try {
        const reply = await api.get<Record<string, unknown> | Row[]>(endpoint, { query: { ...applied, limit: PAGE_SIZE, offset: pageParam } });
        if (Array.isArray(reply)) return reply;
        return rowsKey ? ((reply[rowsKey] as Row[] | undefined) ?? []) : [];
      } catch (error) {
        // SPEC §8: list failures are logged, not shown; loading stops.
        console.error(`Error fetching ${endpoint}`, error);
        throw error;
      }
    },
    getNextPageParam: (lastPage, pages) => (lastPage.length === PAGE_SIZE ? pages.length * PAGE_SIZE : undefined),
    retry: false,
  });
  const rows = query.data?.pages.flat() ?? [];

  const apply = (event?: FormEvent) => {
    event?.preventDefault();
    const next = new URLSearchParams();
    for (const name of fixedParams) if (applied[name]) next.set(name, applied[name]);
    for (const [name, value] of Object.entries(draft)) {
      if (!names.includes(name)) continue;
      const filter = filters.find((candidate) => candidate.name === name);
      const cleaned = toQueryValue(filter, value);
      if (cleaned) next.set(name, cleaned);
    }
    showFromFirstPage(next, draft);
  };

  const clear = () => {
    const next = new URLSearchParams();
    for (const name of fixedParams) if (applied[name]) next.set(name, applied[name]);
    const cleared = {};
    setDraft(cleared);
    showFromFirstPage(next, cleared);
  };

  return (
    <Page maxWidth={1400}>
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={1} sx={{ mb: 2, justifyContent: 'space-between', alignItems: { sm: 'center' } }}>
        <Typography variant="h1" component="h1">
          {props.title}
        </Typography>
        {props.headerActions}
      </Stack>

      <Card sx={{ p: 2, mb: 2 }}>
        <Button
          onClick={() => setFiltersOpen((open) => !open)}
          aria-expanded={filtersOpen}
          sx={{ display: { xs: 'inline-flex', sm: 'none' }, mb: filtersOpen ? 1 : 0, px: 0 }}
        >
          {filtersOpen ? 'Hide filters' : `Filters${activeCount ? ` (${activeCount})` : ''}`}
        </Button>
        <Box component="form" onSubmit={apply} aria-label="Filters" sx={{ display: { xs: filtersOpen ? 'block' : 'none', sm: 'block' } }}>
          <Box sx={{ display: 'grid', gap: 1.5, gridTemplateColumns: { xs: '1fr', sm: 'repeat(2, 1fr)', md: 'repeat(4, 1fr)' } }}>
            {filters.map((filter) => (
              <FilterField
                key={filter.name}
                filter={filter}
                value={draft[filter.name] ?? (filter.name === 'order' ? 'desc' : '')}
                onChange={(value) => setDraft((current) => ({ ...current, [filter.name]: value }))}
              />
            ))}
          </Box>
          <Stack direction="row" spacing={1} sx={{ mt: 1.5 }}>
            <Button type="submit" variant="contained">
              Apply Filters
            </Button>
            <Button onClick={clear}>Clear Filters</Button>
          </Stack>
        </Box>
      </Card>

      {query.isPending ? (
        <Typography role="status" sx={{ py: 4, textAlign: 'center' }}>
          Loading...
        </Typography>
      ) : (
        <Card>
          <TableContainer sx={{ overflowX: 'auto' }}>
            <Table size="small" aria-label={typeof props.title === 'string' ? props.title : 'List'} sx={STACK_ON_PHONES}>
              <TableHead>
                <TableRow>
                  {columns.map((column) => (
                    <TableCell key={column.label} sx={{ fontWeight: 700, whiteSpace: 'nowrap', width: column.narrow ? '1%' : undefined }}>
                      {column.label}
                    </TableCell>
                  ))}
                  <TableCell sx={{ fontWeight: 700, width: '1%' }}>Actions</TableCell>
                </TableRow>
              </TableHead>
              <TableBody>
                {rows.map((row) => (
                  <TableRow key={row.id} hover>
                    {columns.map((column) => (
                      <TableCell
                        key={column.label}
                        data-label={column.label}
                        sx={{ whiteSpace: column.narrow ? 'nowrap' : 'normal', minWidth: column.narrow ? undefined : column.wide ? 180 : 110 }}
                      >
                        {column.render(row)}
                      </TableCell>
                    ))}
                    <TableCell data-label="" sx={{ whiteSpace: 'nowrap' }}>
                      {actions(row)}
                    </TableCell>
                  </TableRow>
                ))}
                {rows.length === 0 && !query.isError && (
                  <TableRow>
                    <TableCell colSpan={columns.length + 1} sx={{ py: 4, textAlign: 'center', color: 'text.secondary' }}>
                      Nothing to show
                    </TableCell>
                  </TableRow>
                )}
              </TableBody>
            </Table>
          </TableContainer>
          {query.hasNextPage && (
            <Box sx={{ p: 1.5, textAlign: 'center' }}>
              <Button onClick={() => void query.fetchNextPage()} disabled={query.isFetchingNextPage} variant="outlined">
                {query.isFetchingNextPage ? 'Loading...' : 'Load More'}
              </Button>
            </Box>
          )}
        </Card>
      )}
      {props.children}
    </Page>
  );
}

function FilterField({ filter, value, onChange }: { filter: FilterDef; value: string; onChange: (value: string) => void }) {
  if (filter.type === 'select') {
    return (
      <TextField
        select
        size="small"
        label={filter.label}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        slotProps={{ inputLabel: { shrink: true }, select: { displayEmpty: true } }}
      >
        {filter.options.map((option) => (
          <MenuItem key={option.value} value={option.value}>
            {option.label}
          </MenuItem>
        ))}
      </TextField>
    );
  }
  if (filter.type === 'datetime') {
    return (
      <TextField
        size="small"
        type="datetime-local"
        label={filter.label}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        slotProps={{ inputLabel: { shrink: true } }}
      />
    );
  }
  return <TextField size="small" label={filter.label} value={value} onChange={(event) => onChange(event.target.value)} />;
}
