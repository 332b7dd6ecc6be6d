import { Button, Stack, TextField } from '@mui/material';
import { useQueryClient } from '@tanstack/react-query';
import { useSnackbar } from 'notistack';
import { useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { authKeys, login } from '../../api/auth.ts';
import { ApiError } from '../../api/client.ts';
import { AuthCard } from './AuthCard.tsx';

/** Sign in (SPEC §2); after it, the console's Status screen (DESIGN §7). */
export default function LoginPage() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const { enqueueSnackbar } = useSnackbar();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { state } = useLocation() as { state: { from?: string } | null };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      const reply = await login(username, password);
      queryClient.setQueryData(authKeys.me, reply.username);
      const from = state?.from && state.from !== '/admin/login' ? state.from : '/admin/status';
      navigate(from, { replace: true });
    } catch (caught) {
      const cause = caught instanceof ApiError ? (caught.serverMessage ?? caught.message) : String(caught);
      enqueueSnackbar(`Error logging in: ${cause}`, { variant: 'error' });
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthCard title="Sign in">
      <Stack component="form" spacing={2} onSubmit={submit}>
        <TextField label="Username" value={username} onChange={(event) => setUsername(event.target.value)} required autoComplete="username" autoFocus />
        <TextField label="Password" type="password" value={password} onChange={(event) => setPassword(event.target.value)} required autoComplete="current-password" />
        <Button type="submit" variant="contained" size="large" disabled={busy}>
          Sign In
        </Button>
      </Stack>
    </AuthCard>
  );
}
