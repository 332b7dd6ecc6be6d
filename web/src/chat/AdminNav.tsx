import { useEffect, useId, useRef, useState } from 'react';
import { logout } from '../api/auth-requests.ts';
import { NAV_GROUPS } from '../app/nav.ts';
import { ChevronDownIcon, MenuIcon } from './icons.tsx';

const consoleHref = (path: string) => `/ui${path}`;

/** A button that opens a list of links below it; closes on Escape, a click elsewhere or leaving it with Tab. */
function Disclosure({ label, icon, buttonLabel, children }: { label: string; icon?: React.ReactNode; buttonLabel?: string; children: React.ReactNode }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const onPointer = (event: PointerEvent) => {
      if (!ref.current?.contains(event.target as Node)) setOpen(false);
    };
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') {
        setOpen(false);
        ref.current?.querySelector('button')?.focus();
      }
    };
    document.addEventListener('pointerdown', onPointer);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('pointerdown', onPointer);
      document.removeEventListener('keydown', onKey);
    };
  }, [open]);
  return (
    <div
      className="cc-disclosure"
      ref={ref}
      onBlur={(event) => {
        if (!ref.current?.contains(event.relatedTarget as Node | null)) setOpen(false);
      }}
    >
      <button type="button" className="cc-header-button" aria-expanded={open} aria-controls={id} aria-label={buttonLabel} onClick={() => setOpen((value) => !value)}>
        {icon}
        {!buttonLabel && label}
        {!icon && <ChevronDownIcon size={16} />}
      </button>
      <div id={id} className="cc-disclosure__panel" hidden={!open}>
        {children}
      </div>
    </div>
  );
}

async function signOut() {
  try {
    await logout();
  } finally {
    window.location.assign('/ui/admin/login');
  }
}

/**
 * The console's navigation on the chat, for a signed-in admin only (SPEC
 * §2): grouped menus on a wide screen, one menu on a phone, and 'Log out
 * (username)'. Loaded only when the server says an admin is signed in.
 */
export default function AdminNav({ username }: { username: string }) {
  return (
    <nav className="cc-admin-nav" aria-label="Console">
      <div className="cc-admin-nav__wide">
        {NAV_GROUPS.map((group) => (
          <Disclosure key={group.label} label={group.label}>
            <ul>
              {group.items.map((item) => (
                <li key={item.path}>
                  <a href={consoleHref(item.path)}>{item.label}</a>
                </li>
              ))}
            </ul>
          </Disclosure>
        ))}
        <button type="button" className="cc-header-button cc-header-button--outlined" onClick={() => void signOut()}>
          Log out ({username})
        </button>
      </div>
      <div className="cc-admin-nav__compact">
        <Disclosure label="Navigation" buttonLabel="Open navigation" icon={<MenuIcon />}>
          {NAV_GROUPS.map((group) => (
            <div key={group.label}>
              <p className="cc-disclosure__group">{group.label}</p>
              <ul>
                {group.items.map((item) => (
                  <li key={item.path}>
                    <a href={consoleHref(item.path)}>{item.label}</a>
                  </li>
                ))}
              </ul>
            </div>
          ))}
          <ul>
            <li>
              <button type="button" onClick={() => void signOut()}>
                Log out ({username})
              </button>
            </li>
          </ul>
        </Disclosure>
      </div>
    </nav>
  );
}
