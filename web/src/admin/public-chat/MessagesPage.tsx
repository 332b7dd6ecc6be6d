import { FEEDBACK_TYPE_LABELS, type FeedbackItem, type FeedbackType, type PublicChatMessage } from '@concierge/contract';
import { Button, Chip, Dialog, DialogActions, DialogContent, DialogTitle, List, ListItem, ListItemText, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client.ts';
import { cut } from '../../components/format.ts';
import { DateTime } from '../../components/DateTime.tsx';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  { name: 'session_id', label: 'Session ID', type: 'text' },
  {
    name: 'role',
    label: 'Role',
    type: 'select',
    options: [
      { value: '', label: 'All' },
      { value: 'user', label: 'User' },
      { value: 'assistant', label: 'Assistant' },
    ],
  },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §4: completed green, failed red, processing orange, others neutral. */
export function StateChip({ state }: { state: string }) {
  const color = state === 'completed' ? 'success' : state === 'failed' ? 'error' : state === 'processing' ? 'warning' : 'default';
  return <Chip size="small" color={color} label={state} />;
}

function RoleChip({ role }: { role: string }) {
  return <Chip size="small" variant="outlined" color={role === 'user' ? 'primary' : 'secondary'} label={role} />;
}

const feedbackLabel = (type: string) => FEEDBACK_TYPE_LABELS[type as FeedbackType] ?? type;

function FeedbackDialog({ message, onClose }: { message: PublicChatMessage; onClose: () => void }) {
  const feedback = useQuery({
    queryKey: ['message-feedback', message.id],
    queryFn: () => api.get<{ feedback: FeedbackItem[] }>('/api/public/chat/feedback', { query: { message_id: message.id, order: 'asc', limit: 100 } }),
  });
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="sm" aria-labelledby="feedback-title">
      <DialogTitle id="feedback-title">Feedback for Message #{message.id}</DialogTitle>
      <DialogContent dividers>
        <Typography variant="body2" sx={{ mb: 2, p: 1.5, bgcolor: 'action.hover', borderRadius: 1, whiteSpace: 'pre-wrap' }}>
          {cut(message.content, 300)}
        </Typography>
        {feedback.isPending ? (
          <Typography>Loading...</Typography>
        ) : (feedback.data?.feedback.length ?? 0) === 0 ? (
          <Typography color="text.secondary">No feedback found for this message.</Typography>
        ) : (
          <List dense disablePadding>
            {feedback.data!.feedback.map((item) => (
              <ListItem key={item.id} disableGutters alignItems="flex-start">
                <ListItemText
                  primary={
                    <>
                      <Chip size="small" label={feedbackLabel(item.type)} sx={{ mr: 1 }} />
                      {<DateTime value={item.created_at} />}
                    </>
                  }
                  secondary={[item.description, item.detail && `Detail: ${item.detail}`, item.client_ip && `IP: ${item.client_ip}`].filter(Boolean).join(' · ') || undefined}
                />
              </ListItem>
            ))}
          </List>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </Dialog>
  );
}

/** Public Chat Messages (SPEC §2). */
export default function MessagesPage() {
  const [selected, setSelected] = useState<PublicChatMessage | null>(null);
  const [feedbackFor, setFeedbackFor] = useState<PublicChatMessage | null>(null);

  const columns: ColumnDef<PublicChatMessage>[] = [
    { label: 'ID', render: (row) => row.id, narrow: true },
    { label: 'Session ID', render: (row) => <Truncated text={row.session_id} max={8} />, narrow: true },
    { label: 'Role', render: (row) => <RoleChip role={row.role} />, narrow: true },
    { label: 'Content', render: (row) => <Truncated text={row.content} max={50} />, wide: true },
    { label: 'Response', render: (row) => <Truncated text={row.response} max={100} empty="-" />, wide: true },
    { label: 'State', render: (row) => <StateChip state={row.state} />, narrow: true },
    { label: 'Tokens', render: (row) => row.total_tokens, narrow: true },
    { label: 'Created', render: (row) => <DateTime value={row.created_at} />, narrow: true },
    {
      label: 'Feedback',
      narrow: true,
      render: (row) =>
        row.role !== 'user' ? (
          '-'
        ) : row.feedback_count > 0 ? (
          <Button size="small" variant="outlined" onClick={() => setFeedbackFor(row)}>
            {row.feedback_count}
          </Button>
        ) : (
          'No feedback'
        ),
    },
  ];

  return (
    <ListPage<PublicChatMessage>
      title="Public Chat Messages"
      endpoint="/api/public_chat_messages"
      rowsKey="messages"
      filters={FILTERS}
      columns={columns}
      actions={(row) => (
        <Button size="small" onClick={() => setSelected(row)}>
          View Details
        </Button>
      )}
    >
      {feedbackFor && <FeedbackDialog message={feedbackFor} onClose={() => setFeedbackFor(null)} />}
      {selected && (
        <DetailsDialog
          open
          title="Public Chat Message Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Session ID', value: selected.session_id },
            { label: 'Role', value: selected.role },
            { label: 'Content', value: selected.content, pre: true },
            { label: 'State', value: <StateChip state={selected.state} /> },
            { label: 'Client IP', value: selected.client_ip },
            { label: 'User Agent', value: selected.user_agent },
            { label: 'OpenAI Message ID', value: selected.openai_message_id },
            { label: 'Run ID', value: selected.run_id },
            { label: 'Run Status', value: selected.run_status },
            { label: 'Prompt Tokens', value: selected.prompt_tokens },
            { label: 'Completion Tokens', value: selected.completion_tokens },
            { label: 'Total Tokens', value: selected.total_tokens },
            { label: 'Processing Duration ms', value: selected.processing_duration_ms },
            { label: 'Response Latency ms', value: selected.response_latency_ms },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
            { label: 'Response', value: selected.response, pre: true },
            { label: 'Error', value: selected.error, error: true },
          ]}
        />
      )}
    </ListPage>
  );
}
