import { Box } from '@mui/material';
import { Outlet } from 'react-router';
import { TopBar } from './TopBar.tsx';

export function Layout() {
  return (
    <Box sx={{ minHeight: '100dvh', display: 'flex', flexDirection: 'column' }}>
      <TopBar />
      <Box component="main" sx={{ flex: 1, display: 'flex', flexDirection: 'column', minHeight: 0 }}>
        <Outlet />
      </Box>
    </Box>
  );
}

/** A centred content column for console pages. */
export function Page({ children, maxWidth = 1200 }: { children: React.ReactNode; maxWidth?: number }) {
  return <Box sx={{ width: '100%', maxWidth, mx: 'auto', px: { xs: 1.5, sm: 3 }, py: { xs: 2, sm: 3 } }}>{children}</Box>;
}
