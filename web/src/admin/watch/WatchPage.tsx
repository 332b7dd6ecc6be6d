import { PUBLIC_CHAT_CONTEXT, WATCH_MAX_ITEMS, type WatchMessage } from '@concierge/contract';
import LockOutlined from '@mui/icons-material/LockOutlined';
import PublicOutlined from '@mui/icons-material/PublicOutlined';
import { Alert, Box, Button, Card, CardContent, Chip, Stack, Typography, type Theme } from '@mui/material';
import { Page } from '../../app/Layout.tsx';
import { DateTime } from '../../components/DateTime.tsx';
import { WATCH_TEXTS, useWatchFeed, type WatchState } from './use-watch-feed.ts';

const STATE_LABELS: Record<WatchState, { label: string; color: 'default' | 'success' | 'error' }> = {
  connecting: { label: 'Connecting…', color: 'default' },
  open: { label: 'Live', color: 'success' },
  closed: { label: 'Disconnected', color: 'error' },
};

/** The light scheme's orange under a white label is 3.1:1: the Private chip takes a darker amber there (5:1). */
const PRIVATE_CHIP = (theme: Theme) => theme.applyStyles('light', { bgcolor: '#b45309', color: '#ffffff', '& .MuiChip-icon': { color: '#ffffff' } });

function StateChip({ state }: { state: string }) {
  const color = state === 'completed' ? 'success' : state === 'failed' ? 'error' : 'default';
  return <Chip size="small" color={color} label={state} />;
}

/** One answer: who asked (global name, user id), what, and the answer or the error. */
function WatchCard({ message }: { message: WatchMessage }) {
  const publicChat = message.context === PUBLIC_CHAT_CONTEXT;
  const name = message.global_name || message.username || 'Unknown user';
  return (
    <Card component="li" variant="outlined" sx={{ listStyle: 'none', ...(message.private ? { borderColor: 'warning.main', borderLeftWidth: 4 } : {}) }} aria-label={`${message.private ? 'Private answer' : 'Answer'} to ${name}`}>
      <CardContent sx={{ '&:last-child': { pb: 2 } }}>
        <Stack direction="row" spacing={1} useFlexGap sx={{ alignItems: 'center', flexWrap: 'wrap', mb: 1 }}>
          <Typography component="h2" variant="subtitle1" sx={{ fontWeight: 600 }}>
            {name}
          </Typography>
          <Typography variant="body2" color="text.secondary" sx={{ fontFamily: 'monospace', wordBreak: 'break-all' }} data-testid="watch-user-id">
            {message.user_id}
          </Typography>
          {message.private && <Chip size="small" color="warning" icon={<LockOutlined />} label="Private" sx={PRIVATE_CHIP} />}
          {publicChat && <Chip size="small" variant="outlined" icon={<PublicOutlined />} label="Public chat" />}
          <StateChip state={message.state} />
          <Box sx={{ flexGrow: 1 }} />
          <Typography variant="body2" color="text.secondary" sx={{ whiteSpace: 'nowrap' }}>
            <DateTime value={message.created_at} />
          </Typography>
        </Stack>
        <Typography variant="body2" sx={{ fontWeight: 600, whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }} data-testid="watch-prompt">
          {message.prompt}
        </Typography>
        {message.response && (
          <Typography variant="body2" sx={{ mt: 1, whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }} data-testid="watch-response">
            {message.response}
          </Typography>
        )}
        {message.error && (
          <Typography variant="body2" color="error" sx={{ mt: 1, whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
            {message.error}
          </Typography>
        )}
      </CardContent>
    </Card>
  );
}

/** SPEC §2 Watch: the live feed of answers over the websocket, newest first. */
export default function WatchPage({ title }: { title: string }) {
  const { state, items, reconnect } = useWatchFeed();
  const status = STATE_LABELS[state];
  return (
    <Page maxWidth={960}>
      <Stack direction="row" spacing={2} sx={{ alignItems: 'center', mb: 2 }}>
        <Typography variant="h1" component="h1">
          {title}
        </Typography>
        <Chip size="small" color={status.color} label={status.label} data-testid="watch-state" />
      </Stack>
      {state === 'closed' && (
        <Alert
          severity="error"
          sx={{ mb: 2 }}
          action={
            <Button color="inherit" size="small" onClick={reconnect}>
              Reconnect
            </Button>
          }
        >
          {WATCH_TEXTS.closed}
        </Alert>
      )}
      <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
        Every answer from Discord and the public chat as it is given, newest first (the last {WATCH_MAX_ITEMS} are kept).
      </Typography>
      {items.length === 0 ? (
        <Card variant="outlined">
          <CardContent>
            <Typography color="text.secondary">{state === 'open' ? 'Waiting for answers…' : 'No answers yet.'}</Typography>
          </CardContent>
        </Card>
      ) : (
        <Stack component="ol" spacing={1.5} sx={{ p: 0, m: 0 }} aria-label="Answers, newest first">
          {items.map((item) => (
            <WatchCard key={item.key} message={item.message} />
          ))}
        </Stack>
      )}
    </Page>
  );
}
