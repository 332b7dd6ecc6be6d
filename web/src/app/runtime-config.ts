/** Run-time values the server injects into index.html (DESIGN §7); defaults apply under `vite` dev. */
export interface RuntimeConfig {
  productName: string;
  turnstileSiteKey: string | null;
  communityUrl: string | null;
  conventionUrl: string | null;
  version: string;
  /** The convention's IANA zone: every time shown to attendees is in it (DESIGN §9 "Times shown to people"). */
  timeZone: string;
  /** The admin signed in on this browser, when the server says so; the chat's navigation shows only then (SPEC §2). */
  adminUsername: string | null;
  /** The operator's public chat wording (Config screen, DESIGN §9); markdown except the prompts. */
  chat: {
    welcomeMessage: string;
    /** The welcome rendered by the server (safe HTML: raw HTML in the markdown is escaped), so it shows without the markdown renderer. */
    welcomeHtml: string | null;
    examplePrompts: string[];
    aboutText: string;
  };
}

const DEFAULTS: RuntimeConfig = {
  productName: 'Con Concierge',
  turnstileSiteKey: null,
  communityUrl: null,
  conventionUrl: null,
  version: 'dev',
  timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  adminUsername: null,
  chat: {
    welcomeMessage: "Hi! I'm Con Concierge, your guide to the convention. Ask me about panels, guests, rooms and times — for example:",
    welcomeHtml: null,
    examplePrompts: [],
    aboutText: 'Con Concierge is an independent, fan-made tool. It is not endorsed by or affiliated with the convention or its organizers.',
  },
};

const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);

/**
 * Who is signed in, read defensively: a server that does not say yet (or
 * says it in another shape) leaves the navigation hidden, never a request.
 */
function adminUsername(raw: Record<string, unknown>): string | null {
  const admin = raw.admin;
  if (admin && typeof admin === 'object') return text((admin as { username?: unknown }).username);
  return text(raw.adminUsername) ?? text(raw.username);
}

function read(): RuntimeConfig {
  const element = typeof document === 'undefined' ? null : document.getElementById('app-config');
  if (!element?.textContent) return DEFAULTS;
  try {
    const raw = JSON.parse(element.textContent) as Record<string, unknown>;
    const chat = (raw.chat ?? {}) as Partial<RuntimeConfig['chat']>;
    return {
      ...DEFAULTS,
      ...(raw as Partial<RuntimeConfig>),
      timeZone: text(raw.timeZone) ?? DEFAULTS.timeZone,
      adminUsername: adminUsername(raw),
      chat: { ...DEFAULTS.chat, ...chat, welcomeHtml: text(chat.welcomeHtml) },
    };
  } catch {
    return DEFAULTS;
  }
}

export const runtimeConfig: RuntimeConfig = read();
