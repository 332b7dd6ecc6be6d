/** Run-time values the server injects into index.html (DESIGN §7); defaults apply under `vite` dev. */
export interface RuntimeConfig {
  productName: string;
  turnstileSiteKey: string | null;
  communityUrl: string | null;
  conventionUrl: string | null;
  version: string;
}

const DEFAULTS: RuntimeConfig = {
  productName: 'Con Concierge',
  turnstileSiteKey: null,
  communityUrl: null,
  conventionUrl: null,
  version: 'dev',
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
