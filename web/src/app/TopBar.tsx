import ChatBubbleOutline from '@mui/icons-material/ChatBubbleOutlineOutlined';
import InfoOutlined from '@mui/icons-material/InfoOutlined';
import KeyboardArrowDown from '@mui/icons-material/KeyboardArrowDown';
import MenuIcon from '@mui/icons-material/Menu';
import {
  AppBar,
  Box,
  Button,
  Divider,
  IconButton,
  ListSubheader,
  Menu,
  MenuItem,
  Toolbar,
  Tooltip,
  Typography,
  useMediaQuery,
  useTheme,
} from '@mui/material';
import { lazy, Suspense, useState, type MouseEvent } from 'react';
import { Link as RouterLink, useLocation, useNavigate } from 'react-router';
import { logout, useForgetLogin, useLoggedIn } from '../api/auth.ts';
import { CHAT_URL, NAV_GROUPS, type NavGroup } from './nav.ts';
import { runtimeConfig } from './runtime-config.ts';

const InfoDialog = lazy(() => import('../components/InfoDialog.tsx'));

/** Product title, the info button, the navigation and 'Log out (username)' (SPEC §2). */
export function TopBar() {
  const [infoOpen, setInfoOpen] = useState(false);
  const { data: username } = useLoggedIn();
  const theme = useTheme();
  const wide = useMediaQuery(theme.breakpoints.up('md'));
  const signedIn = Boolean(username);
  const showNav = signedIn;

  return (
    <>
      <AppBar position="sticky" color="primary">
        <Toolbar sx={{ gap: 1, minHeight: { xs: 56 } }}>
          {showNav && !wide && <CompactNav username={username!} />}
          <Typography
            {...(signedIn ? { component: RouterLink, to: '/admin/status' } : { component: 'a', href: CHAT_URL })}
            variant="h6"
            noWrap
            sx={{ color: 'inherit', textDecoration: 'none', fontWeight: 700, minWidth: 0, flexShrink: 1 }}
          >
            {runtimeConfig.productName}
          </Typography>
          <Tooltip title="About this app">
            <IconButton color="inherit" aria-label="About this app" onClick={() => setInfoOpen(true)} size="small">
              <InfoOutlined />
            </IconButton>
          </Tooltip>
          <Box sx={{ flexGrow: 1 }} />
          {showNav && wide && NAV_GROUPS.map((group) => <GroupMenu key={group.label} group={group} />)}
          {(wide || !signedIn) && (
            <Button color="inherit" href={CHAT_URL} startIcon={<ChatBubbleOutline />} sx={{ whiteSpace: 'nowrap' }}>
              Public Chat
            </Button>
          )}
          {signedIn && wide && <LogoutButton username={username!} />}
        </Toolbar>
      </AppBar>
      {infoOpen && (
        <Suspense fallback={null}>
          <InfoDialog onClose={() => setInfoOpen(false)} />
        </Suspense>
      )}
    </>
  );
}

/** One dropdown per group on wide screens. */
function GroupMenu({ group }: { group: NavGroup }) {
  const [anchor, setAnchor] = useState<HTMLElement | null>(null);
  const { pathname } = useLocation();
  const active = group.items.some((item) => pathname === item.path);
  const id = `nav-${group.label.replace(/\s+/g, '-').toLowerCase()}`;
  return (
    <>
      <Button
        color="inherit"
        aria-haspopup="menu"
        aria-controls={anchor ? id : undefined}
        aria-expanded={anchor ? 'true' : undefined}
        endIcon={<KeyboardArrowDown />}
        onClick={(event: MouseEvent<HTMLElement>) => setAnchor(event.currentTarget)}
        sx={{ fontWeight: active ? 800 : 600, borderBottom: active ? '2px solid currentColor' : '2px solid transparent', borderRadius: 0 }}
      >
        {group.label}
      </Button>
      <Menu id={id} anchorEl={anchor} open={Boolean(anchor)} onClose={() => setAnchor(null)}>
        {group.items.map((item) => (
          <MenuItem key={item.path} component={RouterLink} to={item.path} selected={pathname === item.path} onClick={() => setAnchor(null)}>
            {item.label}
          </MenuItem>
        ))}
      </Menu>
    </>
  );
}

/** Everything in one menu on small screens, with the chat link and 'Log out (username)' at the end. */
function CompactNav({ username }: { username: string }) {
  const [anchor, setAnchor] = useState<HTMLElement | null>(null);
  const { pathname } = useLocation();
  const signOut = useSignOut();
  const close = () => setAnchor(null);
  return (
    <>
      <IconButton color="inherit" edge="start" aria-label="Open navigation" onClick={(event) => setAnchor(event.currentTarget)}>
        <MenuIcon />
      </IconButton>
      <Menu anchorEl={anchor} open={Boolean(anchor)} onClose={close} slotProps={{ paper: { sx: { maxHeight: '80vh', minWidth: 240 } } }}>
        {NAV_GROUPS.flatMap((group, index) => [
          ...(index > 0 ? [<Divider key={`${group.label}-divider`} />] : []),
          <ListSubheader key={`${group.label}-header`} sx={{ lineHeight: '32px' }}>
            {group.label}
          </ListSubheader>,
          ...group.items.map((item) => (
            <MenuItem key={item.path} component={RouterLink} to={item.path} selected={pathname === item.path} onClick={close}>
              {item.label}
            </MenuItem>
          )),
        ])}
        <Divider />
        <MenuItem component="a" href={CHAT_URL} onClick={close}>
          Public Chat
        </MenuItem>
        <MenuItem
          onClick={() => {
            close();
            void signOut();
          }}
        >
          Log out ({username})
        </MenuItem>
      </Menu>
    </>
  );
}

/** Signs out and goes to the login screen. */
function useSignOut() {
  const navigate = useNavigate();
  const forget = useForgetLogin();
  return async () => {
    try {
      await logout();
    } finally {
      forget();
      void navigate('/admin/login', { replace: true });
    }
  };
}

function LogoutButton({ username }: { username: string }) {
  const signOut = useSignOut();
  return (
    <Button color="inherit" variant="outlined" size="small" onClick={() => void signOut()} sx={{ ml: 1, whiteSpace: 'nowrap' }}>
      Log out ({username})
    </Button>
  );
}
