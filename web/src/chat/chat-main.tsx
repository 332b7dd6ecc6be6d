import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ChatApp } from './ChatApp.tsx';
import './chat.css';

/** Mounts the public chat: React and the chat's own few components, nothing of the console. */
export function mountChat(root: HTMLElement): void {
  createRoot(root).render(
    <StrictMode>
      <ChatApp />
    </StrictMode>,
  );
}
