import type { BrowserContext } from 'playwright-core';

/**
 * Browser tests cannot reach Cloudflare, so the Turnstile script is answered
 * with a stand-in that implements the part of `window.turnstile` the widget
 * library uses and renders three buttons: pass (hands the page a token),
 * expire and fail — each calling the callback Cloudflare's widget would.
 */
const STAND_IN = `
(() => {
  const widgets = new Map();
  let next = 0;
  let tokens = 0;
  window.turnstile = {
    render(container, params) {
      const element = typeof container === 'string' ? document.querySelector(container) : container;
      const id = 'stand-in-' + (++next);
      const box = document.createElement('div');
      box.setAttribute('data-testid', 'turnstile-stand-in');
      box.style.cssText = 'display:flex;gap:8px;padding:8px;background:#222;color:#eee;border-radius:6px;font:14px sans-serif;align-items:center';
      box.append('Verification stand-in (' + (params.theme || 'auto') + ', retry ' + (params.retry || 'auto') + ')');
      const button = (label, onClick) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = label;
        b.onclick = onClick;
        box.append(b);
      };
      button('Pass verification', () => {
        const token = 'stand-in-token-' + (++tokens) + '-' + Math.random().toString(36).slice(2);
        widgets.get(id).token = token;
        params.callback && params.callback(token);
      });
      button('Expire verification', () => { widgets.get(id).token = undefined; params['expired-callback'] && params['expired-callback'](); });
      button('Fail verification', () => { widgets.get(id).token = undefined; params['error-callback'] && params['error-callback']('600010'); });
      element.append(box);
      widgets.set(id, { box, params });
      return id;
    },
    remove(id) { const widget = widgets.get(id); if (widget) { widget.box.remove(); widgets.delete(id); } },
    reset(id) { const widget = widgets.get(id); if (widget) widget.token = undefined; },
    getResponse(id) { return widgets.get(id) && widgets.get(id).token; },
    isExpired() { return false; },
    execute() {},
    ready(callback) { callback(); },
  };
  const onload = new URL(document.currentScript.src).searchParams.get('onload');
  if (onload && typeof window[onload] === 'function') window[onload]();
})();
`;

export async function serveTurnstileStandIn(context: BrowserContext): Promise<void> {
  await context.route('https://challenges.cloudflare.com/**', (route) =>
    route.fulfill({ status: 200, contentType: 'application/javascript', body: STAND_IN }),
  );
}
