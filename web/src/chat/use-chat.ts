import type { ChatExchange } from '@concierge/contract';
import { CHAT_MESSAGE_MAX } from '@concierge/contract/chat-constants';
import { startTransition, useCallback, useEffect, useRef, useState } from 'react';
import { runtimeConfig } from '../app/runtime-config.ts';
import { CHAT_TEXT, cancelAnswer, checkVerificationEnabled, loadHistory, sendMessage, startNewConversation, verifyToken, type HistoryPage } from './chat-api.ts';
import { newId, type ChatMessage } from './chat-types.ts';
import { toPlainText } from './plain-text.ts';

/** Readiness (SPEC §4 "Chat readiness"). */
export type Readiness =
  | { kind: 'checking' }
  | { kind: 'disabled' }
  | { kind: 'needs_verification'; error: string | null }
  | { kind: 'ready' }
  | { kind: 'failed'; error: string };

const now = () => new Date().toISOString();
const longer = (shown: string, stored: string | undefined) => (stored && stored.length > shown.length ? stored : shown);

export function welcomeMessage(): ChatMessage {
  const { chat } = runtimeConfig;
  return {
    id: 'welcome',
    role: 'assistant',
    text: chat.welcomeMessage,
    timestamp: now(),
    status: 'done',
    welcome: { examples: chat.examplePrompts, html: chat.welcomeHtml },
  };
}

/** A stored exchange as the screen shows it after a reload. */
function restore(exchange: ChatExchange): ChatMessage[] {
  const exchangeId = exchange.feedback_id;
  const question: ChatMessage = { id: `q-${exchangeId}`, role: 'user', text: exchange.question, timestamp: exchange.created_at, exchangeId };
  const base = { id: `a-${exchangeId}`, role: 'assistant' as const, timestamp: exchange.created_at, question: exchange.question, exchangeId };
  if (exchange.state === 'aborted') return [question, { ...base, text: exchange.answer ?? '', status: 'stopped' }];
  if (exchange.answer) {
    return [
      question,
      { ...base, text: exchange.answer, status: 'done', feedbackId: exchange.feedback_id, feedbackSubmitted: exchange.feedback_submitted, sources: exchange.sources },
    ];
  }
  if (exchange.error) return [question, { ...base, text: `Error: ${exchange.error}`, status: 'error' }];
  // Still being answered (a reload while it streamed): shown as waiting until the history has it.
  return [question, { ...base, text: '', status: 'waiting' }];
}

/**
 * Messages drawn after a reload; the older ones of a long conversation stay
 * on the server behind "Show earlier messages", which fetches and draws
 * this many more each time.
 */
export const MESSAGES_SHOWN_AT_ONCE = 20;
/** Exchanges in one page of the history: a question and its answer are two messages. */
const HISTORY_PAGE = MESSAGES_SHOWN_AT_ONCE / 2;

/** A page of the history as messages: the welcome goes first once the page starts the conversation. */
const pageMessages = (page: HistoryPage) => [...(page.earlierCount > 0 ? [] : [welcomeMessage()]), ...page.exchanges.flatMap(restore)];

/** Where the history not fetched yet stands: how many exchanges, older than the exchange `before`. */
interface Earlier {
  count: number;
  before: number;
}
const earlierOf = (page: HistoryPage): Earlier | null => {
  const first = page.exchanges[0];
  return first && page.earlierCount > 0 ? { count: page.earlierCount, before: first.feedback_id } : null;
};

/** Past this length a streamed answer is drawn a few times a second rather than every frame (each drawing parses it all). */
const LONG_ANSWER = 16_000;
const LONG_ANSWER_REDRAW_MS = 250;

/** How often a reloaded page looks again for an answer that was still on its way. */
const FOLLOW_INTERVAL_MS = 2000;
const FOLLOW_FOR_MS = 120_000;

/**
 * The public chat's state: readiness, the messages, one answer in flight
 * (streamed, stoppable), Retry, New conversation, and what screen readers
 * hear (each finished answer once).
 */
export function useChat() {
  const [messages, setMessages] = useState<ChatMessage[]>(() => [welcomeMessage()]);
  const [readiness, setReadiness] = useState<Readiness>({ kind: 'checking' });
  const [verificationOn, setVerificationOn] = useState(false);
  const [verifiedToken, setVerifiedToken] = useState('');
  /** The answer in flight: its message id, client_message_id and how to stop it. */
  const [inFlight, setInFlight] = useState<{ messageId: string; clientMessageId: string; controller: AbortController } | null>(null);
  /** The finished answer (or notice) screen readers hear, once. */
  const [announcement, setAnnouncement] = useState('');
  /** A Stop's cancel request: the next question waits for it, so the server has freed the session. */
  const cancelling = useRef<Promise<void> | null>(null);
  const [restoredAt, setRestoredAt] = useState(0);
  /** The older part of a restored conversation, still on the server; null once it is all here. */
  const [earlier, setEarlier] = useState<Earlier | null>(null);
  const [earlierState, setEarlierState] = useState<'idle' | 'loading' | 'failed'>('idle');
  /** Counts conversations: a page of an earlier one arriving after New conversation is dropped. */
  const conversation = useRef(0);

  const update = useCallback((id: string, change: Partial<ChatMessage> | ((message: ChatMessage) => Partial<ChatMessage>)) => {
    setMessages((current) => current.map((message) => (message.id === id ? { ...message, ...(typeof change === 'function' ? change(message) : change) } : message)));
  }, []);

  // Only the newest page is fetched and drawn: a phone on venue Wi-Fi gets its conversation back after one small reply.
  const restoreHistory = useCallback(async () => {
    const started = conversation.current;
    const page = await loadHistory({ limit: HISTORY_PAGE });
    if (!page || page.exchanges.length === 0 || started !== conversation.current) return;
    // Drawn as a transition: the box answers typing while the conversation appears.
    startTransition(() => {
      setMessages(pageMessages(page));
      setEarlier(earlierOf(page));
      setRestoredAt(Date.now());
    });
  }, []);

  /**
   * "Show earlier messages": fetches the next older page and draws it above
   * the rest; `beforeDraw` runs just before, to note where the reader is.
   */
  const showEarlier = useCallback(
    async (beforeDraw?: () => void) => {
      if (!earlier || earlierState === 'loading') return;
      const started = conversation.current;
      setEarlierState('loading');
      const page = await loadHistory({ limit: HISTORY_PAGE, before: earlier.before });
      if (started !== conversation.current) return;
      if (!page) return setEarlierState('failed');
      beforeDraw?.();
      setMessages((current) => [...pageMessages(page), ...current]);
      setEarlier(earlierOf(page));
      setEarlierState('idle');
    },
    [earlier, earlierState],
  );

  // Readiness: is verification on? If not, an empty-token verification readies the session.
  useEffect(() => {
    let cancelled = false;
    void (async () => {
      const enabled = await checkVerificationEnabled();
      if (cancelled) return;
      if (enabled.kind === 'disabled') return setReadiness({ kind: 'disabled' });
      if (enabled.kind === 'check_failed') {
        setVerificationOn(true);
        return setReadiness({ kind: 'needs_verification', error: CHAT_TEXT.enabledCheckFailed });
      }
      if (enabled.kind === 'enabled') {
        setVerificationOn(true);
        await restoreHistory();
        return setReadiness({ kind: 'needs_verification', error: null });
      }
      const failure = await verifyToken('');
      if (cancelled) return;
      if (failure) return setReadiness({ kind: 'failed', error: failure });
      await restoreHistory();
      setReadiness({ kind: 'ready' });
    })();
    return () => {
      cancelled = true;
    };
  }, [restoreHistory]);

  // After a reload during an answer, look again (at that one exchange) until it is there (or gave up).
  const waitingFor = inFlight ? undefined : messages.find((message) => message.status === 'waiting' && message.exchangeId !== undefined)?.exchangeId;
  useEffect(() => {
    if (waitingFor === undefined) return;
    const started = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - started > FOLLOW_FOR_MS) return clearInterval(timer);
      void loadHistory({ limit: 1, before: waitingFor + 1 }).then((page) => {
        const exchange = page?.exchanges[0];
        if (exchange?.feedback_id !== waitingFor || exchange.state === 'processing') return;
        const fresh = new Map(restore(exchange).map((message) => [message.id, message]));
        setMessages((current) => current.map((message) => fresh.get(message.id) ?? message));
      });
    }, FOLLOW_INTERVAL_MS);
    return () => clearInterval(timer);
  }, [waitingFor]);

  const onVerified = useCallback(async (token: string) => {
    const failure = await verifyToken(token);
    if (failure) {
      setVerifiedToken('');
      setReadiness({ kind: 'needs_verification', error: failure });
      return;
    }
    setVerifiedToken(token);
    setReadiness({ kind: 'ready' });
  }, []);

  const onVerificationLost = useCallback((error: string) => {
    setVerifiedToken('');
    setReadiness({ kind: 'needs_verification', error });
  }, []);

  /**
   * Asks a question; `retryOf` is a failed answer's id, replaced by the new
   * attempt (under a new client_message_id, DESIGN §9). Resolves to what
   * the input box should hold afterwards: the question again after a
   * failure or a Stop, so it can be edited and asked again.
   */
  const ask = useCallback(
    async (text: string, retryOf?: string): Promise<{ restoreInput: string | null }> => {
      const question = text.trim().slice(0, CHAT_MESSAGE_MAX);
      if (!question || inFlight) return { restoreInput: null };
      if (readiness.kind !== 'ready') {
        const error = verificationOn ? CHAT_TEXT.verifyFirst : CHAT_TEXT.noSession;
        setMessages((current) => [...current, { id: newId(), role: 'assistant', text: error, timestamp: now(), status: 'error' }]);
        return { restoreInput: null };
      }
      const answerId = newId();
      const clientMessageId = newId();
      const controller = new AbortController();
      const answer: ChatMessage = { id: answerId, role: 'assistant', text: '', timestamp: now(), status: 'waiting', question };
      setMessages((current) =>
        retryOf
          ? current.map((message) => (message.id === retryOf ? answer : message))
          : [...current, { id: newId(), role: 'user', text: question, timestamp: now() }, answer],
      );
      setInFlight({ messageId: answerId, clientMessageId, controller });
      setAnnouncement('');
      if (cancelling.current) await cancelling.current;

      let streamed = '';
      let beforeRestart = '';
      // One render per frame however fast chunks come: a phone re-renders the markdown, not every token.
      let frame = 0;
      let timer = 0;
      const show = () => {
        frame = 0;
        timer = 0;
        // After a dropped stream the server starts the answer again: keep showing what was there until the new text passes it.
        const shown = beforeRestart.length > streamed.length && beforeRestart.startsWith(streamed) ? beforeRestart : streamed;
        update(answerId, { text: shown, status: 'streaming' });
      };
      const outcome = await sendMessage(question, verifiedToken, clientMessageId, {
        signal: controller.signal,
        onDelta: (chunk) => {
          streamed += chunk;
          if (frame || timer) return;
          if (streamed.length > LONG_ANSWER) timer = window.setTimeout(show, LONG_ANSWER_REDRAW_MS);
          else frame = requestAnimationFrame(show);
        },
        onRestart: () => {
          beforeRestart = streamed.length > beforeRestart.length ? streamed : beforeRestart;
          streamed = '';
        },
      });
      if (frame) cancelAnimationFrame(frame);
      if (timer) clearTimeout(timer);
      setInFlight(null);
      if (outcome.ok) {
        update(answerId, { text: outcome.response, status: 'done', feedbackId: outcome.feedbackId ?? undefined, sources: outcome.sources, timestamp: now() });
        setAnnouncement(toPlainText(outcome.response));
        return { restoreInput: null };
      }
      if (outcome.stopped) {
        update(answerId, (message) => ({ status: 'stopped', text: longer(message.text, outcome.partial) }));
        setAnnouncement('Stopped.');
        return { restoreInput: question };
      }
      update(answerId, { text: outcome.error, status: 'error', markdown: outcome.operatorWording });
      return { restoreInput: question };
    },
    [inFlight, readiness.kind, verificationOn, verifiedToken, update],
  );

  /** Stop (DESIGN §9 cancel): the partial answer stays, marked stopped, and the visitor may ask again at once. */
  const stop = useCallback(() => {
    if (!inFlight) return;
    const { messageId, clientMessageId, controller } = inFlight;
    controller.abort();
    const request = cancelAnswer(clientMessageId)
      .then((ended) => {
        if (!ended?.response) return;
        // What the server kept: the partial answer, or the whole one if it finished before the Stop.
        if (ended.state === 'completed') update(messageId, { text: ended.response, status: 'done', feedbackId: ended.feedback_id });
        else update(messageId, (message) => ({ text: longer(message.text, ended.response ?? '') }));
      })
      .finally(() => {
        if (cancelling.current === request) cancelling.current = null;
      });
    cancelling.current = request;
  }, [inFlight, update]);

  const markFeedback = useCallback((id: string) => update(id, { feedbackSubmitted: true }), [update]);

  /** New conversation (DESIGN §9): the next question starts a new thread; the screen starts again from the welcome. */
  const newConversation = useCallback(async (): Promise<boolean> => {
    if (inFlight) return false;
    const failure = await startNewConversation();
    if (failure) {
      setMessages((current) => [...current, { id: newId(), role: 'assistant', text: failure, timestamp: now(), status: 'error' }]);
      return false;
    }
    conversation.current += 1;
    setMessages([welcomeMessage()]);
    setEarlier(null);
    setEarlierState('idle');
    setAnnouncement('New conversation started.');
    return true;
  }, [inFlight]);

  return {
    messages,
    readiness,
    verificationOn,
    pending: inFlight !== null,
    announcement,
    restoredAt,
    /** Messages of the conversation not drawn yet (the welcome included), for "Show earlier messages (N)". */
    hiddenBefore: earlier ? earlier.count * 2 + 1 : 0,
    earlierState,
    showEarlier,
    ask,
    stop,
    markFeedback,
    newConversation,
    onVerified,
    onVerificationLost,
  };
}
