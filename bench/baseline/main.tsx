// The floor every screen of the app pays: React, ReactDOM and one themed MUI component.
import { Button, CssBaseline, ThemeProvider, createTheme } from '@mui/material';
import { createRoot } from 'react-dom/client';

createRoot(document.getElementById('root')!).render(
  <ThemeProvider theme={createTheme()}>
    <CssBaseline />
    <Button variant="contained">Hello</Button>
  </ThemeProvider>,
);
