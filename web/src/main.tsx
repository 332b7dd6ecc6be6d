import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app/App.tsx';

// The browser's "ResizeObserver loop" notices are harmless layout warnings, not errors (DESIGN §7).
window.addEventListener('error', (event) => {
  if (/ResizeObserver loop/.test(event.message)) event.stopImmediatePropagation();
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
