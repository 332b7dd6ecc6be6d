import { USER_PAGE_SIZES, type User } from '@concierge/contract';
import {
  Alert,
  Box,
  Button,
  Card,
  Chip,
  Link,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableContainer,
  TableHead,
  TablePagination,
  TableRow,
  TableSortLabel,
  Typography,
} from '@mui/material';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSnackbar } from 'notistack';
import { useState, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { ApiError, api, describeHttpError, getCounted } from '../../api/client.ts';
import { Page } from '../../app/Layout.tsx';
import { STACK_ON_PHONES } from '../../components/list/ListPage.tsx';
import { UserEditDialog } from './UserEditDialog.tsx';
import { UserHistoryDialog } from './UserHistoryDialog.tsx';

type Order = 'asc' | 'desc';

const DEFAULT_SIZE = USER_PAGE_SIZES[0];

/** Sort, page size and page as the URL holds them (so a reload shows the same page); anything odd falls back to the defaults. */
function pageFromUrl(params: URLSearchParams): { order: Order; size: number; page: number } {
  const order: Order = params.get('order') === 'desc' ? 'desc' : 'asc';
  const size = Number(params.get('size'));
  const page = Number(params.get('page'));
  return {
    order,
    size: (USER_PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_SIZE,
    page: Number.isInteger(page) && page > 1 ? page - 1 : 0,
  };
}

const yesNo = (value: boolean) => (value ? <Chip size="small" color="primary" label="Yes" /> : <Typography variant="body2" color="text.secondary" component="span">No</Typography>);
const figure = (value: number | undefined) => (value === undefined ? 'N/A' : value);
const ofLimit = (used: number | undefined, limit: number | undefined) => (used === undefined ? 'N/A' : `${used} / ${limit ?? 'N/A'}`);

interface Column {
  label: string;
  render: (user: User, open: { history: () => void; edit: () => void }) => ReactNode;
  narrow?: boolean;
}

/** SPEC §2 "Users": the columns, in order. */
const COLUMNS: Column[] = [
  {
    label: 'Username',
    render: (user, open) => (
      <Link component="button" type="button" onClick={open.history} sx={{ textAlign: 'left', fontWeight: 600 }} aria-label={`History of ${user.username}`}>
        {user.username}
      </Link>
    ),
  },
  { label: 'Global Name', render: (user) => user.global_name ?? 'N/A' },
  { label: 'User ID', render: (user) => user.id, narrow: true },
  { label: 'Priority', render: (user) => yesNo(user.priority), narrow: true },
  { label: 'Donated', render: (user) => yesNo(user.donated), narrow: true },
  { label: 'Ignored', render: (user) => yesNo(user.ignored), narrow: true },
  { label: 'Billable 6h / Limit', render: (user) => ofLimit(user.billable_6h, user.limit_6h), narrow: true },
  { label: 'Attempted 6h', render: (user) => figure(user.attempted_6h), narrow: true },
  { label: 'Limit 6h', render: (user) => figure(user.limit_6h), narrow: true },
  { label: 'Billable 24h / Limit', render: (user) => ofLimit(user.billable_24h, user.limit_24h), narrow: true },
  { label: 'Attempted 24h', render: (user) => figure(user.attempted_24h), narrow: true },
  { label: 'Limit 24h', render: (user) => figure(user.limit_24h), narrow: true },
  {
    label: 'Edit',
    render: (user, open) => (
      <Button size="small" variant="outlined" onClick={open.edit} aria-label={`Edit ${user.username}`}>
        Edit
      </Button>
    ),
    narrow: true,
  },
];

/**
 * Users List (SPEC §2 "Users"): the Discord users by username, a page of
 * 25, 50 or 100 with the true total (X-Total-Count), their use of the 6 h and
 * 24 h limits, a history dialog and an edit dialog.
 */
export default function UsersPage() {
  const { enqueueSnackbar } = useSnackbar();
  const queryClient = useQueryClient();
  const [searchParams, setSearchParams] = useSearchParams();
  const { order, size, page } = pageFromUrl(searchParams);
  const [historyOf, setHistoryOf] = useState<User | null>(null);
  const [editing, setEditing] = useState<User | null>(null);
  const [reloading, setReloading] = useState(false);

  const queryKey = ['users', order, size, page] as const;
  const users = useQuery({
    queryKey,
    queryFn: () => getCounted<User[]>('/api/users', { query: { include_stats: true, order, limit: size, offset: page * size } }),
    placeholderData: keepPreviousData,
    retry: false,
  });
  const rows = users.data?.body ?? [];
  // The server's total; without it (an older server) only what came back, as SPEC first had it.
  const total = users.data ? (users.data.total ?? page * size + rows.length) : 0;

  const go = (next: { order?: Order; size?: number; page?: number }) => {
    const params = new URLSearchParams();
    const merged = { order, size, page, ...next };
    if (merged.order !== 'asc') params.set('order', merged.order);
    if (merged.size !== DEFAULT_SIZE) params.set('size', String(merged.size));
    if (merged.page > 0) params.set('page', String(merged.page + 1));
    setSearchParams(params);
  };

  const reload = async () => {
    setReloading(true);
    try {
      await api.post('/api/users/reload');
      await queryClient.invalidateQueries({ queryKey: ['users'] });
      enqueueSnackbar('Reloaded users', { variant: 'success' });
    } catch (error) {
      enqueueSnackbar(`Error reloading users: ${error instanceof ApiError ? (error.serverMessage ?? error.message) : String(error)}`, { variant: 'error' });
    } finally {
      setReloading(false);
    }
  };

  /** The saved user replaces its row in every cached page (SPEC §2: the row is updated locally). */
  const saved = (user: User) => {
    queryClient.setQueriesData<{ body: User[]; total: number | null }>({ queryKey: ['users'] }, (cached) =>
      cached ? { ...cached, body: cached.body.map((row) => (row.id === user.id ? user : row)) } : cached,
    );
    setEditing(null);
  };

  return (
    <Page maxWidth={1600}>
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={1} sx={{ mb: 2, justifyContent: 'space-between', alignItems: { sm: 'center' } }}>
        <Typography variant="h1" component="h1">
          Users List
        </Typography>
        <Stack direction="row" spacing={1}>
          {/* On phones the table's head (and its sort) folds away: the sort is offered here instead. */}
          <Button
            variant="outlined"
            onClick={() => go({ order: order === 'asc' ? 'desc' : 'asc', page: 0 })}
            sx={{ display: { xs: 'inline-flex', sm: 'none' } }}
            aria-label={`Sort by username, now ${order === 'asc' ? 'A to Z' : 'Z to A'}`}
          >
            Username {order === 'asc' ? 'A→Z' : 'Z→A'}
          </Button>
          <Button variant="outlined" onClick={() => void reload()} disabled={reloading}>
            Reload Users
          </Button>
        </Stack>
      </Stack>

      {users.isError && (
        <Alert severity="error" sx={{ mb: 2 }}>
          Error fetching users: {describeHttpError(users.error)}
        </Alert>
      )}

      {users.isPending ? (
        <Typography role="status" sx={{ py: 4, textAlign: 'center' }}>
          Loading...
        </Typography>
      ) : (
        <Card>
          <TableContainer sx={{ overflowX: 'auto' }}>
            <Table size="small" aria-label="Users" sx={STACK_ON_PHONES}>
              <TableHead>
                <TableRow>
                  {COLUMNS.map((column) => (
                    <TableCell
                      key={column.label}
                      sx={{ fontWeight: 700, lineHeight: 1.3, verticalAlign: 'bottom', px: 1, whiteSpace: column.narrow ? 'normal' : 'nowrap' }}
                      sortDirection={column.label === 'Username' ? order : false}
                    >
                      {column.label === 'Username' ? (
                        <TableSortLabel active direction={order} onClick={() => go({ order: order === 'asc' ? 'desc' : 'asc', page: 0 })}>
                          Username
                        </TableSortLabel>
                      ) : (
                        column.label
                      )}
                    </TableCell>
                  ))}
                </TableRow>
              </TableHead>
              <TableBody sx={{ opacity: users.isPlaceholderData ? 0.6 : 1 }}>
                {rows.map((user) => (
                  <TableRow key={user.id} hover>
                    {COLUMNS.map((column) => (
                      <TableCell key={column.label} data-label={column.label === 'Edit' ? '' : column.label} sx={{ px: 1, whiteSpace: column.narrow ? 'nowrap' : 'normal' }}>
                        {column.render(user, { history: () => setHistoryOf(user), edit: () => setEditing(user) })}
                      </TableCell>
                    ))}
                  </TableRow>
                ))}
                {rows.length === 0 && !users.isError && (
                  <TableRow>
                    <TableCell colSpan={COLUMNS.length} sx={{ py: 4, textAlign: 'center', color: 'text.secondary' }}>
                      No users yet: they appear the first time they use the bot.
                    </TableCell>
                  </TableRow>
                )}
              </TableBody>
            </Table>
          </TableContainer>
          <Box sx={{ borderTop: 1, borderColor: 'divider' }}>
            <TablePagination
              component="div"
              count={total}
              page={total === 0 ? 0 : Math.min(page, Math.max(0, Math.ceil(total / size) - 1))}
              rowsPerPage={size}
              rowsPerPageOptions={[...USER_PAGE_SIZES]}
              onPageChange={(_event, next) => go({ page: next })}
              onRowsPerPageChange={(event) => go({ size: Number(event.target.value), page: 0 })}
              sx={{ '& .MuiTablePagination-toolbar': { flexWrap: 'wrap', pl: { xs: 1, sm: 2 } } }}
            />
          </Box>
        </Card>
      )}

      {historyOf && <UserHistoryDialog user={historyOf} onClose={() => setHistoryOf(null)} />}
      {editing && <UserEditDialog user={editing} onClose={() => setEditing(null)} onSaved={saved} />}
    </Page>
  );
}
