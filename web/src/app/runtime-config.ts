/** Run-time values the server injects into index.html (DESIGN §7); defaults apply under `vite` dev. */
export interface RuntimeConfig {
  productName: string;
  turnstileSiteKey: string | null;
  communityUrl: string | null;
  conventionUrl: string | null;
  version: string;
  /** The operator's public chat wording (Config screen, DESIGN §9); markdown except the prompts. */
  chat: {
    welcomeMessage: string;
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
  chat: {
    welcomeMessage: "Hi! I'm Con Concierge, your guide to the convention. Ask me about panels, guests, rooms and times — for example:",
    examplePrompts: [],
    aboutText: 'Con Concierge is an independent, fan-made tool. It is not endorsed by or affiliated with the convention or its organizers.',
  },
};

function read(): RuntimeConfig {
  const element = document.getElementById('app-config');
  if (!element?.textContent) return DEFAULTS;
  try {
    return { ...DEFAULTS, ...(JSON.parse(element.textContent) as Partial<RuntimeConfig>) };
  } catch {
    return DEFAULTS;
  }
}

export const runtimeConfig: RuntimeConfig = read();
