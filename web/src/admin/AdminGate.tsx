import { Box, CircularProgress, Typography } from '@mui/material';
import { Navigate, Outlet, useLocation } from 'react-router';
import { useLoggedIn, useSetupStatus } from '../api/auth.ts';

export function Loading() {
  return (
    <Box role="status" sx={{ display: 'flex', alignItems: 'center', justifyContent: 'center', gap: 1.5, py: 8 }}>
      <CircularProgress size={20} />
      <Typography>Loading...</Typography>
    </Box>
  );
}

/**
 * Every /admin path: first the setup-required check, then the signed-in
 * check (SPEC §2). Setup pending → /admin/setup; signed out → /admin/login;
 * signed in on the login page → /admin/status.
 */
export function AdminGate() {
  const { pathname } = useLocation();
  const setup = useSetupStatus();
  const onSetup = pathname === '/admin/setup';
  const onLogin = pathname === '/admin/login';
  const me = useLoggedIn(setup.data?.required === false);

  if (setup.isPending || !setup.data) return <Loading />;
  if (setup.data.required) return onSetup ? <Outlet /> : <Navigate to="/admin/setup" replace />;
  if (me.isPending) return <Loading />;
  const signedIn = Boolean(me.data);
  if (onSetup) return <Navigate to={signedIn ? '/admin/status' : '/admin/login'} replace />;
  if (!signedIn && !onLogin) return <Navigate to="/admin/login" replace state={{ from: pathname }} />;
  if (signedIn && onLogin) return <Navigate to="/admin/status" replace />;
  return <Outlet />;
}
