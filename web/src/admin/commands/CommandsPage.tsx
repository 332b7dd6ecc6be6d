import type { KnowledgeDocument } from '@concierge/contract';
import CloudUploadOutlined from '@mui/icons-material/CloudUploadOutlined';
import {
  Box,
  Button,
  Card,
  CardContent,
  Dialog,
  DialogActions,
  DialogContent,
  DialogContentText,
  DialogTitle,
  FormControlLabel,
  Stack,
  Switch,
  Typography,
} from '@mui/material';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useSnackbar } from 'notistack';
import { useState } from 'react';
import { useDropzone, type FileRejection } from 'react-dropzone';
import { ApiError, api, describeHttpError } from '../../api/client.ts';
import { Page } from '../../app/Layout.tsx';
import { KNOWLEDGE_QUERY_KEY, KnowledgeSection } from './KnowledgeSection.tsx';

/** File types the vector store takes (the server checks again, per provider). */
const ACCEPT = {
  'text/plain': ['.txt'],
  'text/markdown': ['.md', '.markdown'],
  'application/json': ['.json'],
  'text/csv': ['.csv'],
  'text/html': ['.html', '.htm'],
  'application/pdf': ['.pdf'],
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': ['.docx'],
};
const ACCEPTED_LIST = Object.values(ACCEPT).flat().join(', ');
const MAX_BYTES = 20 * 1024 * 1024;

/** SPEC §8's file-drop rejections. */
export function rejectionText(rejection: FileRejection): string {
  const error = rejection.errors[0];
  switch (error?.code) {
    case 'file-invalid-type':
      return `File type must be ${ACCEPTED_LIST}`;
    case 'file-too-large':
      return `File is larger than ${MAX_BYTES / 1024 / 1024} MB`;
    case 'file-too-small':
      return 'File is smaller than 1 byte';
    case 'too-many-files':
      return 'Too many files';
    default:
      return error?.message ?? 'File rejected';
  }
}

interface Confirmation {
  title: string;
  text: string;
  run: () => Promise<void>;
}

/** The control panel (SPEC §2 "Control panel"): run/pause, maintenance actions and the vector store. */
export default function CommandsPage() {
  const { enqueueSnackbar } = useSnackbar();
  const queryClient = useQueryClient();
  const [confirmation, setConfirmation] = useState<Confirmation | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const config = useQuery({
    queryKey: ['config'],
    queryFn: async () => {
      try {
        return await api.get<{ paused: boolean }>('/api/config');
      } catch (error) {
        enqueueSnackbar('Error getting bot state config', { variant: 'error' });
        throw error;
      }
    },
  });
  const [paused, setPaused] = useState<boolean | null>(null);
  const isPaused = paused ?? config.data?.paused ?? false;

  const success = (text: string) => enqueueSnackbar(text, { variant: 'success' });
  const failure = (text: string) => enqueueSnackbar(text, { variant: 'error' });

  /** Runs an action once at a time, showing its busy state on the button. */
  const act = async (name: string, fn: () => Promise<void>) => {
    setBusy(name);
    try {
      await fn();
    } finally {
      setBusy(null);
    }
  };

  const toggle = (wantPaused: boolean) =>
    act('toggle', async () => {
      try {
        await api.post(wantPaused ? '/api/pause' : '/api/resume');
        setPaused(wantPaused);
        success(wantPaused ? 'Bot paused' : 'Bot resumed');
      } catch (error) {
        // SPEC §4: a 409 means it already was in that state; the switch follows.
        if (error instanceof ApiError && error.status === 409) {
          setPaused(wantPaused);
          enqueueSnackbar(wantPaused ? 'bot already paused' : 'bot already running', { variant: 'info' });
        } else {
          failure(wantPaused ? 'Failed to update bot state' : 'Error resuming bot');
        }
      }
      void queryClient.invalidateQueries({ queryKey: ['config'] });
    });

  const clearThreads = () =>
    act('clear', async () => {
      try {
        await api.post('/api/clear_threads');
        success('Threads cleared');
      } catch (error) {
        failure(describeHttpError(error));
      }
    });

  const refresh = (force: boolean) =>
    act(force ? 'force' : 'refresh', async () => {
      try {
        const reply = await api.post<{ held?: boolean; message?: string }>('/api/schedule/refresh', { query: { force: force ? 'true' : undefined }, timeoutMs: 120_000 });
        // A held run keeps the previous schedule live: say so rather than report a plain success.
        if (reply.held) enqueueSnackbar(reply.message ?? 'The schedule run is held; press Force to make it live', { variant: 'warning' });
        else success('Refresh triggered');
        void queryClient.invalidateQueries({ queryKey: KNOWLEDGE_QUERY_KEY });
      } catch (error) {
        failure(describeHttpError(error));
      }
    });

  const simple = (name: string, path: string, ok: string, bad: string) => () =>
    act(name, async () => {
      try {
        await api.post(path);
        success(ok);
      } catch (error) {
        failure(`${bad}: ${error instanceof ApiError ? (error.serverMessage ?? error.message) : String(error)}`);
      }
    });

  const vectorStores = () =>
    act('stores', async () => {
      try {
        const stores = await api.get('/api/openai/vector_stores');
        console.info('Vector stores', stores);
        success('got vector stores');
      } catch (error) {
        console.error('Error getting vector stores', error);
        failure('Error getting vector stores');
      }
    });

  const upload = (file: File) =>
    act('upload', async () => {
      const form = new FormData();
      form.append('file', file, file.name);
      try {
        const reply = await api.post<{ message?: string }>('/api/openai/vector_store/upload', { form, timeoutMs: 180_000 });
        success(`File uploaded successfully: ${reply.message ?? JSON.stringify(reply)}`);
        void queryClient.invalidateQueries({ queryKey: KNOWLEDGE_QUERY_KEY });
      } catch (error) {
        failure(`Failed to upload file: ${error instanceof ApiError ? (error.serverMessage ?? error.message) : String(error)}`);
      }
    });

  const deleteDocument = (document: KnowledgeDocument) =>
    act('delete', async () => {
      try {
        await api.delete(`/api/knowledge/${document.id}`);
        success(`Deleted ${document.title}`);
      } catch (error) {
        failure(`Failed to delete ${document.title}: ${error instanceof ApiError ? (error.serverMessage ?? error.message) : String(error)}`);
      }
      void queryClient.invalidateQueries({ queryKey: KNOWLEDGE_QUERY_KEY });
    });

  const dropzone = useDropzone({
    accept: ACCEPT,
    maxFiles: 1,
    multiple: false,
    maxSize: MAX_BYTES,
    minSize: 1,
    disabled: busy === 'upload',
    onDrop: (accepted, rejected) => {
      for (const rejection of rejected.slice(0, 1)) failure(rejectionText(rejection));
      const [first] = accepted;
      if (first && rejected.length === 0) void upload(first);
    },
  });

  return (
    <Page maxWidth={900}>
      <Typography variant="h1" component="h1" sx={{ mb: 2 }}>
        Control Panel
      </Typography>
      <Stack spacing={2}>
        <Card>
          <CardContent>
            <Typography variant="h2" component="h2" gutterBottom>
              General
            </Typography>
            <FormControlLabel
              control={<Switch checked={!isPaused} disabled={config.isPending || busy === 'toggle'} onChange={(event) => void toggle(!event.target.checked)} />}
              label={isPaused ? 'Paused' : 'Running'}
              sx={{ mb: 2 }}
            />
            <Box sx={{ display: 'grid', gap: 1, gridTemplateColumns: { xs: '1fr', sm: 'repeat(3, 1fr)' } }}>
              <Button
                variant="outlined"
                disabled={busy !== null}
                onClick={() =>
                  setConfirmation({ title: 'Clear Threads', text: 'Every visitor and user starts a new conversation. Continue?', run: clearThreads })
                }
              >
                Clear Threads
              </Button>
              <Button variant="outlined" disabled={busy !== null} onClick={simple('register', '/api/discord/register_commands', 'Commands registered', 'Error registering commands')}>
                Register Discord Commands
              </Button>
              <Button variant="outlined" disabled={busy !== null} onClick={simple('connect', '/api/discord/connect', 'Discord connected', 'Error connecting to Discord')}>
                Connect Discord
              </Button>
              <Button
                variant="outlined"
                disabled={busy !== null}
                onClick={() =>
                  setConfirmation({
                    title: 'Disconnect Discord',
                    text: 'The bot leaves Discord and stays off (in every server process) until someone presses Connect Discord. Answers already being written still arrive. Continue?',
                    run: simple('disconnect', '/api/discord/disconnect', 'Discord disconnected', 'Error disconnecting from Discord'),
                  })
                }
              >
                Disconnect Discord
              </Button>
              <Button variant="outlined" disabled={busy !== null} onClick={() => void refresh(false)}>
                Refresh Schedule
              </Button>
              <Button
                variant="outlined"
                disabled={busy !== null}
                onClick={() =>
                  setConfirmation({ title: 'Force', text: 'Refresh the schedule even if it has not changed?', run: () => refresh(true) })
                }
              >
                Force
              </Button>
              <Button variant="outlined" disabled={busy !== null} onClick={simple('reload', '/api/users/reload', 'Reloaded users', 'Error reloading users')}>
                Reload Users
              </Button>
              <Button
                variant="outlined"
                color="error"
                disabled={busy !== null}
                onClick={() =>
                  setConfirmation({
                    title: 'Kill',
                    text: 'Restart the server? It finishes the answers in flight (up to 2 minutes) and exits; under a supervisor (the systemd unit in deploy/, Docker\'s restart policy) it starts again at once. Without one it stays stopped until someone starts it.',
                    run: simple('kill', '/api/quit', 'Quit!', 'Error sending quit signal'),
                  })
                }
              >
                Kill
              </Button>
            </Box>
          </CardContent>
        </Card>

        <Card>
          <CardContent>
            <Typography variant="h2" component="h2" gutterBottom>
              OpenAI
            </Typography>
            <Button variant="outlined" disabled={busy !== null} onClick={() => void vectorStores()} sx={{ mb: 2 }}>
              Vector Stores
            </Button>
            <Box
              {...dropzone.getRootProps()}
              aria-label="Vector Store Upload"
              sx={{
                border: 2,
                borderStyle: 'dashed',
                borderColor: dropzone.isDragActive ? 'primary.main' : 'divider',
                borderRadius: 2,
                p: 4,
                textAlign: 'center',
                cursor: 'pointer',
                bgcolor: dropzone.isDragActive ? 'action.hover' : 'transparent',
              }}
            >
              <input {...dropzone.getInputProps()} data-testid="vector-store-upload-input" />
              <CloudUploadOutlined color="action" sx={{ fontSize: 40 }} />
              <Typography sx={{ fontWeight: 600 }}>Vector Store Upload</Typography>
              <Typography variant="body2" color="text.secondary">
                {busy === 'upload' ? 'Uploading…' : `Drop one file here or click to choose (${ACCEPTED_LIST}; up to 20 MB)`}
              </Typography>
            </Box>
          </CardContent>
        </Card>

        <KnowledgeSection
          busy={busy !== null}
          onDelete={(document) =>
            setConfirmation({
              title: 'Delete',
              text: `Remove “${document.title}” (${document.filename}) from what the assistant knows?`,
              run: () => deleteDocument(document),
            })
          }
        />
      </Stack>

      <Dialog open={confirmation !== null} onClose={() => setConfirmation(null)} aria-labelledby="confirm-title">
        <DialogTitle id="confirm-title">Confirmation</DialogTitle>
        <DialogContent>
          <DialogContentText>
            <strong>{confirmation?.title}</strong> — {confirmation?.text}
          </DialogContentText>
        </DialogContent>
        <DialogActions>
          <Button onClick={() => setConfirmation(null)}>Cancel</Button>
          <Button
            variant="contained"
            onClick={() => {
              const run = confirmation?.run;
              setConfirmation(null);
              void run?.();
            }}
          >
            Confirm
          </Button>
        </DialogActions>
      </Dialog>
    </Page>
  );
}
