import { FEEDBACK_TYPE_LABELS, type FeedbackType } from '@concierge/contract/chat-constants';
import { HISTORY_PAGE_SIZE, type HistoryItem, type User } from '@concierge/contract';
import { Alert, Box, Button, Card, Dialog, DialogActions, DialogContent, DialogTitle, Stack, Typography } from '@mui/material';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { api, describeHttpError } from '../../api/client.ts';
import { DateTime } from '../../components/DateTime.tsx';

/** Votes on an answer as "Good Response 2 · Other 1" (SPEC §4 labels); None without any. */
export function describeFeedback(feedback: Record<string, number>): string {
  const parts = Object.entries(feedback)
    .filter(([, count]) => count > 0)
    .map(([type, count]) => `${FEEDBACK_TYPE_LABELS[type as FeedbackType] ?? type} ${count}`);
  return parts.length ? parts.join(' · ') : 'None';
}

/** SPEC §2's history fields, in its order. */
function fields(item: HistoryItem): { label: string; value: ReactNode; error?: boolean; long?: boolean }[] {
  return [
    { label: 'Prompt', value: item.prompt, long: true },
    { label: 'Response', value: item.response || 'N/A', long: true },
    { label: 'Error', value: item.error, error: true },
    { label: 'Created', value: <DateTime value={item.created_at} /> },
    { label: 'State', value: item.state },
    { label: 'Step', value: item.step },
    { label: 'Run Status', value: item.run_status },
    { label: 'Run ID', value: item.run_id },
    { label: 'Thread ID', value: item.thread_id },
    { label: 'Interaction ID', value: item.interaction_id },
    { label: 'Context', value: item.context },
    { label: 'Whisper', value: item.whisper ? 'yes' : 'no' },
    { label: 'Feedback', value: describeFeedback(item.feedback) },
  ];
}

/** A user's ask commands, newest first, 20 a page (SPEC §2 history dialog, §9). */
export function UserHistoryDialog({ user, onClose }: { user: User; onClose: () => void }) {
  const [page, setPage] = useState(0);
  const history = useQuery({
    queryKey: ['user-history', user.id, page],
    queryFn: () => api.get<HistoryItem[]>(`/api/user/${user.id}/history`, { query: { sort: 'desc', limit: HISTORY_PAGE_SIZE, offset: page * HISTORY_PAGE_SIZE } }),
    placeholderData: keepPreviousData,
    retry: false,
  });
  const items = history.data ?? [];
  const full = items.length === HISTORY_PAGE_SIZE;

  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="md" scroll="paper" aria-labelledby="history-title">
      <DialogTitle id="history-title">
        History of {user.username}
        {user.global_name ? ` (${user.global_name})` : ''}
      </DialogTitle>
      <DialogContent dividers>
        {history.isError && <Alert severity="error">Error fetching user history: {describeHttpError(history.error)}</Alert>}
        {history.isPending && (
          <Typography role="status" sx={{ py: 2, textAlign: 'center' }}>
            Loading...
          </Typography>
        )}
        {history.isSuccess && items.length === 0 && (
          <Typography color="text.secondary">{page === 0 ? 'No ask commands yet.' : 'No older ask commands.'}</Typography>
        )}
        <Stack spacing={1.5} sx={{ opacity: history.isPlaceholderData ? 0.6 : 1 }}>
          {items.map((item) => (
            <Card key={item.ask_command_id} variant="outlined" sx={{ p: 1.5 }} component="article" aria-label={`Ask command ${item.ask_command_id}`}>
              <Box component="dl" sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', sm: '140px 1fr' }, columnGap: 2, rowGap: { xs: 0.25, sm: 0.5 }, m: 0 }}>
                {fields(item).map((field) => {
                  const empty = field.value === null || field.value === undefined || field.value === '';
                  return (
                    <Box key={field.label} sx={{ display: 'contents' }}>
                      <Typography component="dt" variant="body2" color="text.secondary" sx={{ fontWeight: 600, mt: { xs: 0.75, sm: 0 } }}>
                        {field.label}
                      </Typography>
                      <Typography
                        component="dd"
                        variant="body2"
                        sx={{ m: 0, color: field.error && !empty ? 'error.main' : 'text.primary', whiteSpace: field.long ? 'pre-wrap' : 'normal', wordBreak: 'break-word' }}
                      >
                        {empty ? 'N/A' : field.value}
                      </Typography>
                    </Box>
                  );
                })}
              </Box>
            </Card>
          ))}
        </Stack>
      </DialogContent>
      <DialogActions sx={{ flexWrap: 'wrap', gap: 1 }}>
        <Typography variant="body2" color="text.secondary" sx={{ mr: 'auto', pl: 1 }}>
          Page {page + 1}
        </Typography>
        <Button onClick={() => setPage((current) => current - 1)} disabled={page === 0 || history.isFetching}>
          Newer
        </Button>
        <Button onClick={() => setPage((current) => current + 1)} disabled={!full || history.isFetching}>
          Older
        </Button>
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </Dialog>
  );
}
