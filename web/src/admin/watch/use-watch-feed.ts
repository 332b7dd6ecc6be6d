import { WATCH_CONNECTED_TEXT, WATCH_MAX_ITEMS, type WatchMessage, type WsTokenReply } from '@concierge/contract';
import { useSnackbar } from 'notistack';
import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../../api/client.ts';

export type WatchState = 'connecting' | 'open' | 'closed';

/** SPEC §4 (websocket closed) and §8 (websocket setup). */
export const WATCH_TEXTS = {
  connected: 'connected',
  closed: 'WebSocket connection closed. Please refresh the page to reconnect.',
  setupError: (error: unknown) => `Error setting up websocket: ${error instanceof Error ? error.message : String(error)}`,
};

/** One message as the screen keeps it: a key of its own (two answers may share every field). */
export interface WatchItem {
  key: number;
  message: WatchMessage;
}

const socketUrl = (token: string) => `${window.location.protocol === 'https:' ? 'wss:' : 'ws:'}//${window.location.host}/ws?token=${encodeURIComponent(token)}`;

/**
 * The live Watch feed: a token, then the websocket; newest message first,
 * at most WATCH_MAX_ITEMS kept. A closed feed says so once, and connects
 * again with a fresh token when the page comes back into view or focus.
 */
export function useWatchFeed(): { state: WatchState; items: WatchItem[]; reconnect: () => void } {
  const { enqueueSnackbar } = useSnackbar();
  const [state, setState] = useState<WatchState>('connecting');
  const [items, setItems] = useState<WatchItem[]>([]);
  const socket = useRef<WebSocket | null>(null);
  const connecting = useRef(false);
  const nextKey = useRef(0);
  const unmounted = useRef(false);

  const connect = useCallback(async () => {
    if (connecting.current || (socket.current && socket.current.readyState <= WebSocket.OPEN)) return;
    connecting.current = true;
    setState('connecting');
    try {
      const { token } = await api.post<WsTokenReply>('/api/ws/token');
      if (unmounted.current) return;
      const ws = new WebSocket(socketUrl(token));
      socket.current = ws;
      ws.onopen = () => {
        setState('open');
        enqueueSnackbar(WATCH_TEXTS.connected, { variant: 'success' });
      };
      ws.onmessage = (event: MessageEvent) => {
        if (typeof event.data !== 'string' || event.data === WATCH_CONNECTED_TEXT) return;
        let message: WatchMessage;
        try {
          message = JSON.parse(event.data) as WatchMessage;
        } catch {
          return;
        }
        const item = { key: nextKey.current++, message };
        setItems((previous) => [item, ...previous].slice(0, WATCH_MAX_ITEMS));
      };
      ws.onclose = () => {
        if (socket.current === ws) socket.current = null;
        if (unmounted.current) return;
        setState('closed');
        enqueueSnackbar(WATCH_TEXTS.closed, { variant: 'error', preventDuplicate: true });
      };
    } catch (error) {
      if (unmounted.current) return;
      setState('closed');
      enqueueSnackbar(WATCH_TEXTS.setupError(error), { variant: 'error' });
    } finally {
      connecting.current = false;
    }
  }, [enqueueSnackbar]);

  useEffect(() => {
    unmounted.current = false;
    void connect();
    // Back in view (another tab, a phone woken up): a closed feed connects again with a fresh token.
    const onVisible = () => {
      if (document.visibilityState === 'visible') void connect();
    };
    const onFocus = () => void connect();
    document.addEventListener('visibilitychange', onVisible);
    window.addEventListener('focus', onFocus);
    return () => {
      unmounted.current = true;
      document.removeEventListener('visibilitychange', onVisible);
      window.removeEventListener('focus', onFocus);
      socket.current?.close(1000, 'Leaving the Watch screen');
      socket.current = null;
    };
  }, [connect]);

  return { state, items, reconnect: () => void connect() };
}
