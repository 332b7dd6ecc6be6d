import { Button, Stack, Typography } from '@mui/material';
import { CHAT_URL } from './nav.ts';

export function NotFoundPage() {
  return (
    <Stack spacing={2} sx={{ p: 4, alignItems: 'center', textAlign: 'center' }}>
      <Typography variant="h1">Page not found</Typography>
      <Typography color="text.secondary">There is nothing at this address.</Typography>
      <Button href={CHAT_URL} variant="contained">
        Go to the chat
      </Button>
    </Stack>
  );
}
