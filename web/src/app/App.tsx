import { CssBaseline, ThemeProvider, styled } from '@mui/material';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { MaterialDesignContent, SnackbarProvider } from 'notistack';
import { RouterProvider } from 'react-router';
import { authKeys } from '../api/auth.ts';
import { onUnauthorized } from '../api/client.ts';
import { router } from './router.tsx';
import { theme } from './theme.ts';

const queryClient = new QueryClient({
  defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false } },
});

// DESIGN §7: a 401 on an admin call goes to the login screen.
onUnauthorized(() => {
  queryClient.setQueryData(authKeys.me, null);
  const path = window.location.pathname;
  if (path.startsWith('/ui/admin') && path !== '/ui/admin/login' && path !== '/ui/admin/setup') {
    void router.navigate('/admin/login', { replace: true });
  }
});

/** notistack's own colours put white text on 2–3:1 backgrounds; these meet WCAG AA (4.5:1) in both schemes. */
const Toast = styled(MaterialDesignContent)({
  '&.notistack-MuiContent-success': { backgroundColor: '#2e7d32', color: '#ffffff' },
  '&.notistack-MuiContent-error': { backgroundColor: '#c62828', color: '#ffffff' },
  '&.notistack-MuiContent-info': { backgroundColor: '#1565c0', color: '#ffffff' },
  '&.notistack-MuiContent-warning': { backgroundColor: '#ffb74d', color: '#1a1a1a' },
});
const TOASTS = { success: Toast, error: Toast, info: Toast, warning: Toast, default: Toast };

export function App() {
  return (
    <ThemeProvider theme={theme}>
      <CssBaseline />
      <QueryClientProvider client={queryClient}>
        <SnackbarProvider maxSnack={4} anchorOrigin={{ vertical: 'bottom', horizontal: 'center' }} autoHideDuration={5000} Components={TOASTS}>
          <RouterProvider router={router} />
        </SnackbarProvider>
      </QueryClientProvider>
    </ThemeProvider>
  );
}
