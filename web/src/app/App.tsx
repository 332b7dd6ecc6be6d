import { CssBaseline, ThemeProvider } from '@mui/material';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { SnackbarProvider } from 'notistack';
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

export function App() {
  return (
    <ThemeProvider theme={theme}>
      <CssBaseline />
      <QueryClientProvider client={queryClient}>
        <SnackbarProvider maxSnack={4} anchorOrigin={{ vertical: 'bottom', horizontal: 'center' }} autoHideDuration={5000}>
          <RouterProvider router={router} />
        </SnackbarProvider>
      </QueryClientProvider>
    </ThemeProvider>
  );
}
