import { CHAT_MESSAGE_MAX } from '@concierge/contract/chat-constants';
import { lazy, Suspense, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { runtimeConfig } from '../app/runtime-config.ts';
import { CHAT_TEXT } from './chat-api.ts';
import type { ChatMessage } from './chat-types.ts';
import { ArrowDownIcon, InfoIcon, NewChatIcon, SendIcon, StopIcon } from './icons.tsx';
import { preloadMarkdown } from './LazyMarkdown.tsx';
import { Message, type MessageActions } from './Message.tsx';
import { useChat, type Readiness } from './use-chat.ts';

// Loaded after first paint: none of them is needed to read the welcome or type a question.
const FeedbackDialog = lazy(() => import('./FeedbackDialog.tsx'));
const InfoDialog = lazy(() => import('../components/InfoDialog.tsx'));
const Verification = lazy(() => import('./Verification.tsx'));
const AdminNav = lazy(() => import('./AdminNav.tsx'));

/** How close to the end (px) still counts as "reading the latest". */
const AT_END_SLACK = 32;

/** The public chat (SPEC §2 "Public chat screen"), on its own light entry: no console code, plain CSS. */
export function ChatApp() {
  const chat = useChat();
  const { messages, readiness, pending } = chat;
  const [input, setInput] = useState('');
  const [feedbackFor, setFeedbackFor] = useState<ChatMessage | null>(null);
  const [infoOpen, setInfoOpen] = useState(false);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const ready = readiness.kind === 'ready';
  const focusInput = useCallback(() => inputRef.current?.focus({ preventScroll: true }), []);
  // After a dialog closes: once it is gone, as the page behind a modal dialog cannot take the focus.
  const focusInputSoon = useCallback(() => window.setTimeout(focusInput, 0), [focusInput]);

  const scroll = useConversationScroll(messages, chat.restoredAt);
  const { hiddenBefore, earlierState, showEarlier } = chat;
  // "Show earlier messages" fetches them and draws them above what the visitor is reading, which stays where it was on
  // the screen (where it is when they arrive: the visitor may scroll while they come).
  const fromBottom = useRef<number | null>(null);
  const earlierButton = useRef<HTMLButtonElement>(null);
  const earlierHadFocus = useRef(false);
  const revealEarlier = () =>
    showEarlier(() => {
      const box = scroll.containerRef.current;
      fromBottom.current = box ? box.scrollHeight - box.scrollTop : null;
      earlierHadFocus.current = document.activeElement === earlierButton.current;
    });
  useLayoutEffect(() => {
    const box = scroll.containerRef.current;
    if (box && fromBottom.current !== null) box.scrollTop = box.scrollHeight - fromBottom.current;
    fromBottom.current = null;
    // The last page takes the button away: its focus goes to the conversation it was in, not back to the page's start.
    if (earlierHadFocus.current && !earlierButton.current) box?.focus({ preventScroll: true });
    earlierHadFocus.current = false;
  }, [messages, scroll.containerRef]);

  // Once the chat becomes ready (or ready again after verification), the box takes the focus with a mouse at hand
  // (a phone's keyboard would jump up unasked), unless the focus is elsewhere already: on the page, or, embedded, on the host site.
  const wasReady = useRef(false);
  useEffect(() => {
    const focusIsFree = document.hasFocus() && (document.activeElement === null || document.activeElement === document.body);
    if (ready && !wasReady.current && focusIsFree && window.matchMedia('(pointer: fine)').matches) focusInput();
    wasReady.current = ready;
  }, [ready, focusInput]);

  const ask = async (text: string, retryOf?: ChatMessage) => {
    if (!text.trim() || pending) return;
    if (!retryOf) setInput('');
    else if (input.trim() === text.trim()) setInput('');
    scroll.toEnd();
    focusInput();
    const { restoreInput } = await chat.ask(text, retryOf?.id);
    if (restoreInput !== null) setInput((current) => (current.trim() ? current : restoreInput));
    focusInput();
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      if (!pending) void ask(input);
    }
  };

  // Stable while an answer streams, so only the message that changes renders again (its markdown is parsed anew each frame).
  const latestAsk = useRef(ask);
  latestAsk.current = ask;
  const busy = pending || !ready;
  const actions = useMemo<MessageActions>(
    () => ({
      busy,
      onExample: (prompt) => void latestAsk.current(prompt),
      onRetry: (message) => message.question && void latestAsk.current(message.question, message),
      onFeedback: setFeedbackFor,
    }),
    [busy],
  );

  const startOver = async () => {
    if (await chat.newConversation()) setInput('');
    focusInput();
  };

  return (
    <div className="cc-app">
      <header className="cc-header">
        <h1 className="cc-title">{runtimeConfig.productName}</h1>
        <button type="button" className="cc-header-icon" aria-label="About this app" title="About this app" onClick={() => setInfoOpen(true)}>
          <InfoIcon size={22} />
        </button>
        <span className="cc-spacer" />
        {runtimeConfig.adminUsername && (
          <Suspense fallback={null}>
            <AdminNav username={runtimeConfig.adminUsername} />
          </Suspense>
        )}
        <button type="button" className="cc-header-button" onClick={() => void startOver()} disabled={pending} aria-label="New conversation" title="New conversation">
          <NewChatIcon />
          <span className="cc-wide-only" aria-hidden="true">
            New conversation
          </span>
        </button>
      </header>
      <main className="cc-main">
        <div className="cc-log-wrap">
          <section className="cc-log" aria-label="Conversation" ref={scroll.containerRef} onScroll={scroll.onScroll} tabIndex={-1}>
            <div className="cc-log__inner" ref={scroll.contentRef}>
              {hiddenBefore > 0 && (
                <div className="cc-show-earlier">
                  {/* Not disabled while it loads: a disabled button would drop the keyboard's focus. */}
                  <button
                    type="button"
                    ref={earlierButton}
                    className="cc-button cc-button--outlined"
                    aria-disabled={earlierState === 'loading'}
                    onClick={() => void revealEarlier()}
                  >
                    {earlierState === 'loading' ? 'Loading earlier messages…' : `Show earlier messages (${hiddenBefore})`}
                  </button>
                  {earlierState === 'failed' && (
                    <p className="cc-note" role="alert">
                      {CHAT_TEXT.earlierFailed}
                    </p>
                  )}
                </div>
              )}
              {messages.map((message) => (
                <Message key={message.id} message={message} actions={actions} />
              ))}
            </div>
          </section>
          {!scroll.atEnd && (
            <button type="button" className="cc-scroll-latest" onClick={() => scroll.toEnd('smooth')}>
              <ArrowDownIcon size={18} />
              Scroll to latest
            </button>
          )}
        </div>
        <div className="cc-composer">
          <ReadinessNotice readiness={readiness} verificationOn={chat.verificationOn} onVerified={chat.onVerified} onLost={chat.onVerificationLost} />
          <form
            className="cc-composer__row"
            onSubmit={(event) => {
              event.preventDefault();
              if (!pending) void ask(input);
            }}
          >
            <AutoGrowTextarea
              inputRef={inputRef}
              value={input}
              // The markdown renderer is fetched once the visitor starts on a question, well before the answer needs it.
              onFocus={preloadMarkdown}
              onChange={setInput}
              onKeyDown={onKeyDown}
              disabled={!ready}
            />
            {pending ? (
              <button
                key="stop"
                type="button"
                className="cc-send cc-send--stop"
                aria-label="Stop"
                title="Stop"
                onClick={(event) => {
                  // The answer ends within this click (its promise settles before the click's default action), and the
                  // Send button then in this place must not take the click as a submit of the restored question.
                  event.preventDefault();
                  chat.stop();
                  focusInput();
                }}
              >
                <StopIcon />
              </button>
            ) : (
              <button key="send" type="submit" className="cc-send" aria-label="Send" title="Send" disabled={!ready || !input.trim()}>
                <SendIcon />
              </button>
            )}
          </form>
        </div>
        {/* Screen readers hear each finished answer once, not every chunk. */}
        <div className="cc-sr-only" aria-live="polite" aria-atomic="true">
          {chat.announcement}
        </div>
      </main>
      {feedbackFor?.feedbackId !== undefined && (
        <Suspense fallback={null}>
          <FeedbackDialog
            feedbackId={feedbackFor.feedbackId}
            messageText={feedbackFor.text}
            onSubmitted={() => chat.markFeedback(feedbackFor.id)}
            onClose={() => {
              setFeedbackFor(null);
              focusInputSoon();
            }}
          />
        </Suspense>
      )}
      {infoOpen && (
        <Suspense fallback={null}>
          <InfoDialog
            onClose={() => {
              setInfoOpen(false);
              focusInputSoon();
            }}
          />
        </Suspense>
      )}
    </div>
  );
}

/** The question box: one line, growing to two (SPEC §2), then scrolling. Enter sends, Shift+Enter adds a line. */
function AutoGrowTextarea({
  inputRef,
  value,
  onChange,
  onKeyDown,
  onFocus,
  disabled,
}: {
  inputRef: React.RefObject<HTMLTextAreaElement | null>;
  value: string;
  onFocus: () => void;
  onChange: (value: string) => void;
  onKeyDown: (event: KeyboardEvent<HTMLTextAreaElement>) => void;
  disabled: boolean;
}) {
  useLayoutEffect(() => {
    const area = inputRef.current;
    if (!area) return;
    area.style.height = 'auto';
    area.style.height = `${area.scrollHeight + (area.offsetHeight - area.clientHeight)}px`;
  }, [value, inputRef]);
  return (
    <textarea
      ref={inputRef}
      className="cc-input"
      rows={1}
      value={value}
      maxLength={CHAT_MESSAGE_MAX}
      placeholder="Ask about panels, guests, rooms…"
      aria-label="Your question"
      enterKeyHint="send"
      disabled={disabled}
      onChange={(event) => onChange(event.target.value.slice(0, CHAT_MESSAGE_MAX))}
      onKeyDown={onKeyDown}
      onFocus={onFocus}
      onPointerDown={onFocus}
    />
  );
}

/**
 * Keeps the newest message in view: while the visitor is at the end, every
 * change (a new message, a streamed chunk, the markdown renderer arriving, the
 * box growing) keeps them there; once they scroll up, it leaves them be and
 * offers "Scroll to latest".
 */
function useConversationScroll(messages: ChatMessage[], restoredAt: number) {
  const containerRef = useRef<HTMLElement>(null);
  const contentRef = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [atEnd, setAtEnd] = useState(true);

  const distanceToEnd = () => {
    const box = containerRef.current;
    return box ? box.scrollHeight - box.scrollTop - box.clientHeight : 0;
  };
  const toEnd = useCallback((behavior: ScrollBehavior = 'instant') => {
    stick.current = true;
    setAtEnd(true);
    const box = containerRef.current;
    box?.scrollTo({ top: box.scrollHeight, behavior });
  }, []);
  /** Where the box was scrolled to when its last scroll event was handled. */
  const lastTop = useRef(0);
  const onScroll = () => {
    const top = containerRef.current?.scrollTop ?? 0;
    const end = distanceToEnd() <= AT_END_SLACK;
    // Only the visitor scrolling up leaves the end. The event of our own scroll to the end can be handled after the
    // content grew again (a slow phone, a busy page): short of the new end then, it must not stop the following.
    if (end || top < lastTop.current) stick.current = end;
    lastTop.current = top;
    setAtEnd(stick.current);
  };

  useLayoutEffect(() => {
    if (stick.current) toEnd();
    else setAtEnd(distanceToEnd() <= AT_END_SLACK);
  }, [messages, toEnd]);

  // A reload restores the conversation: show its end.
  useLayoutEffect(() => {
    if (restoredAt) toEnd();
  }, [restoredAt, toEnd]);

  useEffect(() => {
    const box = containerRef.current;
    const content = contentRef.current;
    if (!box || !content) return;
    const observer = new ResizeObserver(() => {
      if (stick.current) box.scrollTop = box.scrollHeight;
      else setAtEnd(box.scrollHeight - box.scrollTop - box.clientHeight <= AT_END_SLACK);
    });
    observer.observe(content);
    observer.observe(box);
    return () => observer.disconnect();
  }, []);

  return { containerRef, contentRef, atEnd, toEnd, onScroll };
}

function ReadinessNotice({
  readiness,
  verificationOn,
  onVerified,
  onLost,
}: {
  readiness: Readiness;
  verificationOn: boolean;
  onVerified: (token: string) => void;
  onLost: (error: string) => void;
}) {
  if (readiness.kind === 'disabled') {
    return (
      <p className="cc-notice" role="status">
        {CHAT_TEXT.disabled}
      </p>
    );
  }
  if (readiness.kind === 'failed') {
    return (
      <p className="cc-notice cc-notice--error" role="alert">
        {readiness.error} {CHAT_TEXT.refreshHint}
      </p>
    );
  }
  // The widget stays mounted once verified, so it can report the token's expiry.
  const siteKey = runtimeConfig.turnstileSiteKey;
  const error = readiness.kind === 'needs_verification' ? readiness.error : null;
  if (!verificationOn || readiness.kind === 'checking') return null;
  return (
    <div className="cc-verification">
      {siteKey && (
        <Suspense fallback={<p className="cc-note">Loading the security check…</p>}>
          <Verification
            siteKey={siteKey}
            onVerified={onVerified}
            onExpired={() => onLost(CHAT_TEXT.verificationExpired)}
            onError={() => onLost(CHAT_TEXT.verifyOther)}
          />
        </Suspense>
      )}
      {error && (
        <div className="cc-notice cc-notice--error" role="alert">
          <p>{error}</p>
          <p>{CHAT_TEXT.refreshHint}</p>
        </div>
      )}
    </div>
  );
}
