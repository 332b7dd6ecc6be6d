import { Alert, Button, Stack, TextField } from '@mui/material';
import { useQueryClient } from '@tanstack/react-query';
import { useSnackbar } from 'notistack';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { authKeys, createAdmin } from '../../api/auth.ts';
import { ApiError } from '../../api/client.ts';
import { AuthCard } from './AuthCard.tsx';

export const SETUP_DONE = 'Admin user created successfully! You can now log in.';

/** First-Time Setup (SPEC §2): create the one admin account. */
export default function SetupPage() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const { enqueueSnackbar } = useSnackbar();
  const queryClient = useQueryClient();
  const navigate = useNavigate();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    if (password !== confirm) {
      setError("Passwords don't match");
      return;
    }
    setBusy(true);
    try {
      await createAdmin({ username, password, confirm_password: confirm });
      setDone(true);
    } catch (caught) {
      if (caught instanceof ApiError && caught.status >= 400 && caught.status < 500 && caught.serverMessage) {
        setError(caught.serverMessage);
      } else {
        enqueueSnackbar('An error occurred while creating the admin user', { variant: 'error' });
      }
    } finally {
      setBusy(false);
    }
  };

  if (done) {
    const toLogin = () => {
      // Setup is no longer required: the setup route goes away with this.
      queryClient.setQueryData(authKeys.setup, { required: false });
      void navigate('/admin/login', { replace: true });
    };
    return (
      <AuthCard title="First-Time Setup">
        <Stack spacing={2}>
          <Alert severity="success">{SETUP_DONE}</Alert>
          <Button variant="contained" size="large" onClick={toLogin} autoFocus>
            Go to sign in
          </Button>
        </Stack>
      </AuthCard>
    );
  }

  return (
    <AuthCard title="First-Time Setup" subtitle="Create your admin account to get started.">
      <Stack component="form" spacing={2} onSubmit={submit} noValidate={false}>
        {error && (
          <Alert severity="error" role="alert">
            {error}
          </Alert>
        )}
        <TextField label="Username" value={username} onChange={(event) => setUsername(event.target.value)} required autoComplete="username" autoFocus />
        <TextField label="Password" type="password" value={password} onChange={(event) => setPassword(event.target.value)} required autoComplete="new-password" helperText="At least 8 characters" />
        <TextField label="Confirm Password" type="password" value={confirm} onChange={(event) => setConfirm(event.target.value)} required autoComplete="new-password" />
        <Button type="submit" variant="contained" size="large" disabled={busy}>
          Create Admin User
        </Button>
      </Stack>
    </AuthCard>
  );
}
