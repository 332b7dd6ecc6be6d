import { Box, Button, Dialog, DialogActions, DialogContent, DialogTitle, Link, Stack, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api/client.ts';
import { runtimeConfig } from '../app/runtime-config.ts';
import { Markdown } from '../chat/Markdown.tsx';

interface LastRefresh {
  success: boolean;
  data?: string;
}

/** SPEC §1: shown only when last_refresh is present and not empty, '0' or 'null'. */
const usableRefresh = (value: string | undefined | null): value is string => Boolean(value) && value !== '0' && value !== 'null';

function useLastRefresh(enabled: boolean) {
  return useQuery({
    queryKey: ['last-refresh'],
    queryFn: async () => {
      try {
        const reply = await api.get<LastRefresh>('/public/chat/last_refresh', { timeoutMs: 10_000 });
        return reply.success ? (reply.data ?? null) : null;
      } catch {
        return null; // SPEC §8: a failure is silent.
      }
    },
    enabled,
    staleTime: 60_000,
  });
}

/** The info dialog: what this app is (and is not), links, and when the schedule was last refreshed. */
export function InfoDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { data: lastRefresh } = useLastRefresh(open);
  const { productName, communityUrl, conventionUrl, chat } = runtimeConfig;
  return (
    <Dialog open={open} onClose={onClose} aria-labelledby="info-dialog-title" maxWidth="xs" fullWidth>
      <DialogTitle id="info-dialog-title">About {productName}</DialogTitle>
      <DialogContent>
        <Stack spacing={2}>
          <Box data-testid="about-text">
            <Markdown text={chat.aboutText} />
          </Box>
          {(communityUrl || conventionUrl) && (
            <Stack spacing={0.5}>
              {communityUrl && (
                <Link href={communityUrl} target="_blank" rel="noopener noreferrer">
                  Join the community chat
                </Link>
              )}
              {conventionUrl && (
                <Link href={conventionUrl} target="_blank" rel="noopener noreferrer">
                  Official convention site
                </Link>
              )}
            </Stack>
          )}
          {usableRefresh(lastRefresh) && (
            <Stack spacing={0.5}>
              <Typography variant="subtitle2">Schedule Updates</Typography>
              <Typography variant="body2">Last refreshed {new Date(lastRefresh).toLocaleString()}</Typography>
            </Stack>
          )}
        </Stack>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} variant="contained">
          Got it
        </Button>
      </DialogActions>
    </Dialog>
  );
}
