import { memo, useState } from 'react';
import { runtimeConfig } from '../app/runtime-config.ts';
import type { ChatMessage } from './chat-types.ts';
import { CheckIcon, CopyIcon, FeedbackIcon, RetryIcon } from './icons.tsx';
import { LazyMarkdown, preloadMarkdown } from './LazyMarkdown.tsx';
import { toPlainText } from './plain-text.ts';
import { Sources } from './Sources.tsx';

export interface MessageActions {
  onExample: (prompt: string) => void;
  onRetry: (message: ChatMessage) => void;
  onFeedback: (message: ChatMessage) => void;
  /** Example prompts and Retry wait while an answer is on its way or the chat is not ready. */
  busy: boolean;
}

/** One message of the conversation (SPEC §2): the visitor's on the right as plain text, the assistant's on the left as Markdown. */
export const Message = memo(function Message({ message, actions }: { message: ChatMessage; actions: MessageActions }) {
  if (message.role === 'user') {
    return (
      <div className="cc-row cc-row--user" data-role="user">
        <div className="cc-bubble cc-bubble--user">{message.text}</div>
      </div>
    );
  }
  const { status = 'done' } = message;
  return (
    <div className="cc-row" data-role="assistant" data-status={status}>
      <div className={`cc-bubble cc-bubble--assistant${status === 'error' ? ' cc-bubble--error' : ''}`} aria-busy={status === 'streaming' || status === 'waiting'}>
        {status === 'waiting' ? (
          <Thinking />
        ) : status === 'error' ? (
          <div role="alert">{message.markdown ? <LazyMarkdown text={message.text} /> : <p className="cc-error-text">{message.text}</p>}</div>
        ) : (
          <LazyMarkdown text={message.text} html={message.welcome?.html} />
        )}
        {status === 'stopped' && <p className="cc-note">{message.text ? 'Stopped: the answer is cut short.' : 'Stopped before the answer began.'}</p>}
        {message.welcome && message.welcome.examples.length > 0 && (
          <div className="cc-examples">
            {message.welcome.examples.map((prompt) => (
              <button key={prompt} type="button" className="cc-chip" onClick={() => actions.onExample(prompt)} onPointerDown={preloadMarkdown} disabled={actions.busy}>
                {prompt}
              </button>
            ))}
          </div>
        )}
        {status === 'done' && message.sources && <Sources sources={message.sources} />}
        {status === 'error' && message.question && (
          <div className="cc-actions">
            <button type="button" className="cc-button cc-button--outlined" onClick={() => actions.onRetry(message)} disabled={actions.busy}>
              <RetryIcon size={16} />
              Retry
            </button>
          </div>
        )}
        {(status === 'done' || status === 'stopped') && !message.welcome && message.text && (
          <div className="cc-actions">
            <CopyButton text={message.text} />
            <span className="cc-spacer" />
            {message.feedbackId !== undefined && <FeedbackButton message={message} onFeedback={actions.onFeedback} />}
          </div>
        )}
      </div>
    </div>
  );
});

/** '{product} is thinking...' until the first chunk arrives. */
function Thinking() {
  return (
    <p className="cc-thinking">
      <span className="cc-dots" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
      {runtimeConfig.productName} is thinking...
    </p>
  );
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard API (an insecure page, an old browser): the selection way.
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.cssText = 'position:fixed;opacity:0;pointer-events:none';
    document.body.append(area);
    area.select();
    const copied = document.execCommand('copy');
    area.remove();
    return copied;
  }
}

/** Copies the answer as plain text; says "Copied" for a moment. */
function CopyButton({ text }: { text: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    if (await copyText(toPlainText(text))) {
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    }
  };
  return (
    <button type="button" className="cc-icon-text-button" onClick={() => void copy()} aria-label={copied ? 'Copied' : 'Copy answer'} title={copied ? 'Copied' : 'Copy answer'}>
      {copied ? <CheckIcon size={16} /> : <CopyIcon size={16} />}
      <span aria-hidden="true">{copied ? 'Copied' : 'Copy'}</span>
    </button>
  );
}

/** SPEC §2: 'Provide feedback on this response', then disabled with 'Thank you for your feedback!'. */
function FeedbackButton({ message, onFeedback }: { message: ChatMessage; onFeedback: (message: ChatMessage) => void }) {
  const label = message.feedbackSubmitted ? 'Thank you for your feedback!' : 'Provide feedback on this response';
  return (
    <button type="button" className="cc-icon-button" aria-label={label} title={label} disabled={message.feedbackSubmitted} onClick={() => onFeedback(message)}>
      <FeedbackIcon size={18} />
    </button>
  );
}
