/**
 * The embed snippet's script (GET /ui/embed.js): on the convention's own
 * site, `<script src="https://concierge.example.org/ui/embed.js" async></script>`
 * adds a floating chat button that opens the chat in a panel (an iframe of
 * /ui/chat). The product's address comes from the script's own URL, so the
 * snippet is the only thing the site adds. Optional attributes on the script
 * tag: `data-label` (the button's name, default "Chat with {product}") and
 * `data-position="left"`. The chat only shows inside the frame when the site
 * is listed in EMBED_ORIGINS.
 */
export function embedScript(productName: string): string {
  // JSON.stringify makes a safe string literal; < is escaped so the text can never close a script element.
  const product = JSON.stringify(productName).replace(/</g, '\\u003c');
  return `/* The chat's embed: a floating button and a panel with the chat (see the README). */
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || window.__conciergeEmbed) return;
  window.__conciergeEmbed = true;
  var product = ${product};
  var base = new URL(script.src, location.href);
  var chatUrl = base.origin + '/ui/chat?embed=1';
  var label = script.getAttribute('data-label') || 'Chat with ' + product;
  var left = script.getAttribute('data-position') === 'left';
  var side = left ? 'left' : 'right';

  var style = document.createElement('style');
  style.textContent =
    '.concierge-embed-button{position:fixed;bottom:20px;' + side + ':20px;z-index:2147483000;width:56px;height:56px;border-radius:50%;border:0;' +
    'background:#1565c0;color:#fff;box-shadow:0 4px 14px rgba(0,0,0,.3);cursor:pointer;display:flex;align-items:center;justify-content:center;padding:0}' +
    '.concierge-embed-button:focus-visible{outline:3px solid #ffb300;outline-offset:3px}' +
    '.concierge-embed-button svg{width:28px;height:28px;fill:currentColor}' +
    '.concierge-embed-panel{position:fixed;bottom:88px;' + side + ':20px;z-index:2147483000;width:400px;height:640px;max-height:calc(100vh - 108px);' +
    'border-radius:12px;overflow:hidden;box-shadow:0 8px 30px rgba(0,0,0,.35);background:#fff;display:none}' +
    '.concierge-embed-panel[data-open]{display:block}' +
    '.concierge-embed-panel iframe{border:0;width:100%;height:100%;display:block}' +
    '@media (max-width:600px){.concierge-embed-panel{inset:0;width:auto;height:auto;max-height:none;border-radius:0}' +
    '.concierge-embed-panel[data-open]~.concierge-embed-button{top:12px;bottom:auto;width:44px;height:44px}}';
  document.head.appendChild(style);

  var chatIcon = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>';
  var closeIcon = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M18.3 5.7 12 12l6.3 6.3-1.4 1.4L10.6 13.4 4.3 19.7 2.9 18.3 9.2 12 2.9 5.7 4.3 4.3l6.3 6.3 6.3-6.3z"/></svg>';

  var panel = document.createElement('div');
  panel.className = 'concierge-embed-panel';
  panel.id = 'concierge-embed-panel';
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-label', product);

  var button = document.createElement('button');
  button.type = 'button';
  button.className = 'concierge-embed-button';
  button.setAttribute('aria-controls', panel.id);
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-label', label);
  button.title = label;
  button.innerHTML = chatIcon;

  var frame = null;
  function open() {
    if (!frame) {
      // Loaded on first open only: the host page pays nothing until then.
      frame = document.createElement('iframe');
      frame.src = chatUrl;
      frame.title = product;
      frame.setAttribute('allow', 'clipboard-write');
      panel.appendChild(frame);
    }
    panel.setAttribute('data-open', '');
    button.setAttribute('aria-expanded', 'true');
    button.setAttribute('aria-label', 'Close ' + product);
    button.title = 'Close ' + product;
    button.innerHTML = closeIcon;
    frame.focus();
  }
  function close() {
    panel.removeAttribute('data-open');
    button.setAttribute('aria-expanded', 'false');
    button.setAttribute('aria-label', label);
    button.title = label;
    button.innerHTML = chatIcon;
    button.focus();
  }
  button.addEventListener('click', function () {
    if (panel.hasAttribute('data-open')) close();
    else open();
  });
  document.addEventListener('keydown', function (event) {
    if (event.key === 'Escape' && panel.hasAttribute('data-open')) close();
  });

  function mount() {
    document.body.appendChild(panel);
    document.body.appendChild(button);
  }
  if (document.body) mount();
  else document.addEventListener('DOMContentLoaded', mount);
})();
`;
}
