import { isChatPath } from './app/paths.ts';
import { mountChat } from './chat/chat-main.tsx';

// The browser's "ResizeObserver loop" notices are harmless layout warnings, not errors (DESIGN §7).
window.addEventListener('error', (event) => {
  if (/ResizeObserver loop/.test(event.message)) event.stopImmediatePropagation();
});

const root = document.getElementById('root')!;

/** A console chunk that fails to load (typically after a deploy) says so, with a Reload button (DESIGN §7). */
function showLoadFailure(error: unknown) {
  const box = document.createElement('div');
  box.className = 'cc-load-failure';
  box.setAttribute('role', 'alert');
  const text = document.createElement('p');
  text.textContent = `The console could not be loaded (${error instanceof Error ? error.message : String(error)}). A new version may have been deployed.`;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'cc-button';
  button.textContent = 'Reload';
  button.onclick = () => window.location.reload();
  box.append(text, button);
  root.replaceChildren(box);
}

if (isChatPath(window.location.pathname)) mountChat(root);
else import('./app/console-main.tsx').then(({ mountConsole }) => mountConsole(root), showLoadFailure);
