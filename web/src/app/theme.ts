import { createTheme } from '@mui/material/styles';

/**
 * The console's theme, light or dark as the device prefers (the chat's own
 * CSS does the same). Colours meet WCAG AA on their backgrounds in both.
 * SPEC §9 breakpoints are MUI's defaults (xs 0, sm 600, md 900, lg 1200, xl 1536).
 */
export const theme = createTheme({
  cssVariables: { colorSchemeSelector: 'media' },
  colorSchemes: {
    light: {
      palette: {
        primary: { main: '#3949ab' },
        secondary: { main: '#d81b60' },
        background: { default: '#f4f5fb', paper: '#ffffff' },
      },
    },
    dark: {
      palette: {
        primary: { main: '#aab4ff' },
        secondary: { main: '#ff8fb8' },
        // MUI's dark red (#f44336) is 4.4:1 as text on the paper and 3.7:1 under a chip's white label.
        error: { main: '#ff8a80' },
        background: { default: '#11131d', paper: '#1c1f2d' },
      },
    },
  },
  shape: { borderRadius: 12 },
  typography: {
    fontFamily: '"Inter", "Segoe UI", system-ui, -apple-system, Roboto, "Helvetica Neue", Arial, sans-serif',
    h1: { fontSize: '1.75rem', fontWeight: 700 },
    h2: { fontSize: '1.4rem', fontWeight: 700 },
    button: { textTransform: 'none', fontWeight: 600 },
  },
  components: {
    MuiAppBar: {
      defaultProps: { elevation: 0 },
      // The light scheme's indigo bar; in the dark a bar of the page's own surface, not a pale one.
      styleOverrides: {
        colorPrimary: ({ theme }) => ({
          ...theme.applyStyles('dark', { backgroundColor: '#1c1f2d', color: '#e9eaf4', borderBottom: '1px solid #434863' }),
        }),
      },
    },
    MuiCard: { defaultProps: { variant: 'outlined' } },
    MuiButton: { defaultProps: { disableElevation: true } },
    // A disabled field's help still has to be readable (the greyed text.disabled is 2.7:1).
    MuiFormHelperText: { styleOverrides: { root: ({ theme }) => ({ '&.Mui-disabled': { color: (theme.vars ?? theme).palette.text.secondary } }) } },
  },
});
