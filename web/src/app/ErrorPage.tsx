import { Alert, Box, Button, Typography } from '@mui/material';
import { isRouteErrorResponse, useRouteError } from 'react-router';

/** Vite's message when a lazily loaded chunk cannot be fetched (typically after a deploy). */
export const isChunkLoadError = (error: unknown) =>
  error instanceof Error && /dynamically imported module|Importing a module script failed|error loading dynamically|ChunkLoadError/i.test(error.message);

/** The router's error page (DESIGN §7). */
export function ErrorPage() {
  const error = useRouteError();
  if (isChunkLoadError(error)) return <ChunkLoadFailure />;
  const text = isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : error instanceof Error ? error.message : String(error);
  return (
    <Box role="alert" sx={{ p: 3, maxWidth: 720, mx: 'auto' }}>
      <Typography variant="h1" gutterBottom>
        Unexpected Application Error!
      </Typography>
      <Typography component="pre" sx={{ whiteSpace: 'pre-wrap', color: 'error.main', fontFamily: 'monospace' }}>
        {text}
      </Typography>
      <Button variant="contained" href="/ui/" sx={{ mt: 2 }}>
        Back to the start
      </Button>
    </Box>
  );
}

export function ChunkLoadFailure() {
  return (
    <Box sx={{ p: 3, maxWidth: 560, mx: 'auto' }}>
      <Alert
        severity="warning"
        action={
          <Button color="inherit" size="small" onClick={() => window.location.reload()}>
            Reload
          </Button>
        }
      >
        This part of the app failed to load — usually after an update. Reload the page to get the latest version.
      </Alert>
    </Box>
  );
}
