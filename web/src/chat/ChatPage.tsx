import { CHAT_MESSAGE_MAX, type Source } from '@concierge/contract';
import SendRounded from '@mui/icons-material/SendRounded';
import { Alert, Box, IconButton, Stack, TextField, Typography } from '@mui/material';
import { Turnstile } from '@marsidev/react-turnstile';
import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { runtimeConfig } from '../app/runtime-config.ts';
import { CHAT_TEXT, checkVerificationEnabled, loadHistory, sendMessage, verifyToken } from './chat-api.ts';
import { MessageBubble, ThinkingBubble, type ChatMessage } from './MessageBubble.tsx';

/** Readiness (SPEC §4 "Chat readiness"). */
type Readiness =
  | { kind: 'checking' }
  | { kind: 'disabled' }
  | { kind: 'needs_verification'; error: string | null }
  | { kind: 'ready' }
  | { kind: 'failed'; error: string };

const newId = () => (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);

function welcome(): ChatMessage {
  return {
    id: 'welcome',
    role: 'assistant',
    text: runtimeConfig.chat.welcomeMessage,
    timestamp: new Date().toISOString(),
    examples: runtimeConfig.chat.examplePrompts,
  };
}

/** The public chat screen (SPEC §2 "Public chat screen"). */
export function ChatPage() {
  const [messages, setMessages] = useState<ChatMessage[]>(() => [welcome()]);
  const [input, setInput] = useState('');
  const [pending, setPending] = useState(false);
  const [readiness, setReadiness] = useState<Readiness>({ kind: 'checking' });
  const [verifiedToken, setVerifiedToken] = useState('');
  const [verificationOn, setVerificationOn] = useState(false);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  // After a failed send the box gets its text back and the focus, once it is enabled again.
  const [refocus, setRefocus] = useState(false);
  const endRef = useRef<HTMLDivElement>(null);

  const restoreHistory = useCallback(async () => {
    const exchanges = await loadHistory();
    if (exchanges.length === 0) return;
    const restored: ChatMessage[] = exchanges.flatMap((exchange) => {
      const question: ChatMessage = { id: `q-${exchange.feedback_id}`, role: 'user', text: exchange.question, timestamp: exchange.created_at };
      if (exchange.answer) {
        return [
          question,
          {
            id: `a-${exchange.feedback_id}`,
            role: 'assistant' as const,
            text: exchange.answer,
            timestamp: exchange.created_at,
            feedbackId: exchange.feedback_id,
            feedbackSubmitted: exchange.feedback_submitted,
            sources: exchange.sources,
          },
        ];
      }
      return [question];
    });
    setMessages([welcome(), ...restored]);
  }, []);

  // Readiness: is verification on? If not, an empty-token verification readies the session.
  useEffect(() => {
    let cancelled = false;
    (async () => {
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

  useEffect(() => {
    endRef.current?.scrollIntoView({ behavior: 'smooth', block: 'end' });
  }, [messages, pending]);

  const onVerified = async (token: string) => {
    const failure = await verifyToken(token);
    if (failure) {
      setVerifiedToken('');
      setReadiness({ kind: 'needs_verification', error: failure });
      return;
    }
    setVerifiedToken(token);
    setReadiness({ kind: 'ready' });
  };

  const send = async (text: string) => {
    const message = text.trim().slice(0, CHAT_MESSAGE_MAX);
    if (!message || pending) return;
    if (readiness.kind !== 'ready') {
      const error = verificationOn ? CHAT_TEXT.verifyFirst : CHAT_TEXT.noSession;
      setMessages((current) => [...current, { id: newId(), role: 'assistant', text: error, timestamp: new Date().toISOString(), error: true }]);
      return;
    }
    setMessages((current) => [...current, { id: newId(), role: 'user', text: message, timestamp: new Date().toISOString() }]);
    setInput('');
    setPending(true);
    const outcome = await sendMessage(message, verifiedToken, newId());
    setPending(false);
    if (outcome.ok) {
      setMessages((current) => [
        ...current,
        {
          id: newId(),
          role: 'assistant',
          text: outcome.response,
          timestamp: new Date().toISOString(),
          feedbackId: outcome.feedbackId ?? undefined,
          sources: outcome.sources,
        },
      ]);
    } else {
      setMessages((current) => [
        ...current,
        { id: newId(), role: 'assistant', text: outcome.error, timestamp: new Date().toISOString(), error: true, markdown: outcome.operatorWording },
      ]);
      setInput(message);
      setRefocus(true);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send(input);
    }
  };

  const markFeedback = (id: string) =>
    setMessages((current) => current.map((message) => (message.id === id ? { ...message, feedbackSubmitted: true } : message)));

  const inputDisabled = readiness.kind !== 'ready' || pending;
  useEffect(() => {
    if (refocus && !inputDisabled) {
      inputRef.current?.focus();
      setRefocus(false);
    }
  }, [refocus, inputDisabled]);

  return (
    <Box sx={{ flex: 1, display: 'flex', flexDirection: 'column', minHeight: 0, width: '100%', maxWidth: 820, mx: 'auto' }}>
      <Box role="log" aria-live="polite" aria-label="Conversation" sx={{ flex: 1, overflowY: 'auto', px: { xs: 1.5, sm: 3 }, pt: 2, pb: 1 }}>
        <Stack spacing={1.5}>
          {messages.map((message) => (
            <MessageBubble
              key={message.id}
              message={message}
              onExample={(prompt) => void send(prompt)}
              examplesDisabled={inputDisabled}
              onFeedbackSubmitted={() => markFeedback(message.id)}
            />
          ))}
          {pending && <ThinkingBubble productName={runtimeConfig.productName} />}
          <div ref={endRef} />
        </Stack>
      </Box>
      <Box sx={{ position: 'sticky', bottom: 0, bgcolor: 'background.default', borderTop: 1, borderColor: 'divider', px: { xs: 1.5, sm: 3 }, pt: 1.5, pb: 'max(12px, env(safe-area-inset-bottom))' }}>
        <ReadinessNotice readiness={readiness} verificationOn={verificationOn} onVerified={onVerified} onExpired={() => {
          setVerifiedToken('');
          setReadiness({ kind: 'needs_verification', error: CHAT_TEXT.verificationExpired });
        }} onWidgetError={() => {
          setVerifiedToken('');
          setReadiness({ kind: 'needs_verification', error: CHAT_TEXT.verifyOther });
        }} />
        <Stack direction="row" spacing={1} sx={{ alignItems: 'flex-end' }}>
          <TextField
            inputRef={inputRef}
            value={input}
            onChange={(event) => setInput(event.target.value.slice(0, CHAT_MESSAGE_MAX))}
            onKeyDown={onKeyDown}
            placeholder="Ask about panels, guests, rooms…"
            multiline
            minRows={1}
            maxRows={2}
            fullWidth
            disabled={inputDisabled}
            slotProps={{ htmlInput: { maxLength: CHAT_MESSAGE_MAX, 'aria-label': 'Your question' } }}
            sx={{ bgcolor: 'background.paper', borderRadius: 3, '& fieldset': { borderRadius: 3 } }}
          />
          <IconButton
            color="primary"
            aria-label="Send"
            onClick={() => void send(input)}
            disabled={inputDisabled || !input.trim()}
            sx={{ bgcolor: 'primary.main', color: 'primary.contrastText', width: 48, height: 48, '&:hover': { bgcolor: 'primary.dark' }, '&.Mui-disabled': { bgcolor: 'action.disabledBackground' } }}
          >
            <SendRounded />
          </IconButton>
        </Stack>
      </Box>
    </Box>
  );
}

function ReadinessNotice({
  readiness,
  verificationOn,
  onVerified,
  onExpired,
  onWidgetError,
}: {
  readiness: Readiness;
  verificationOn: boolean;
  onVerified: (token: string) => void;
  onExpired: () => void;
  onWidgetError: () => void;
}) {
  if (readiness.kind === 'disabled') {
    return (
      <Alert severity="info" sx={{ mb: 1.5 }}>
        {CHAT_TEXT.disabled}
      </Alert>
    );
  }
  if (readiness.kind === 'failed') {
    return (
      <Alert severity="error" sx={{ mb: 1.5 }}>
        {readiness.error} {CHAT_TEXT.refreshHint}
      </Alert>
    );
  }
  // The widget stays mounted once verified, so it can report the token's expiry.
  const siteKey = runtimeConfig.turnstileSiteKey;
  const error = readiness.kind === 'needs_verification' ? readiness.error : null;
  if (!verificationOn || readiness.kind === 'checking') return null;
  return (
    <Stack spacing={1} sx={{ mb: 1.5, alignItems: 'center' }}>
      {siteKey && (
        <Turnstile
          siteKey={siteKey}
          options={{ theme: 'dark', retry: 'never', size: 'flexible' }}
          onSuccess={onVerified}
          onExpire={onExpired}
          onError={onWidgetError}
        />
      )}
      {error && (
        <Alert severity="error" sx={{ width: '100%' }}>
          {error}
          <Typography variant="body2">{CHAT_TEXT.refreshHint}</Typography>
        </Alert>
      )}
    </Stack>
  );
}

export type { Source };
