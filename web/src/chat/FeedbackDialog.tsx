import { FEEDBACK_CHOICES, FEEDBACK_DESCRIPTION_MAX, FEEDBACK_OTHER_DESCRIPTION_MAX, type FeedbackType } from '@concierge/contract/chat-constants';
import { useEffect, useId, useState } from 'react';
import { submitFeedback } from './chat-api.ts';
import { Dialog } from './Dialog.tsx';
import { toPlainText } from './plain-text.ts';

const PREVIEW_CHARS = 200;
const CLOSE_AFTER_MS = 1500;
export const FEEDBACK_THANKS = 'Thank you for your feedback! It helps us improve our responses.';

type Phase = 'editing' | 'submitting' | 'submitted';

/** 'Provide Feedback' (SPEC §2, §5): type, optional description, submit. */
export default function FeedbackDialog({
  feedbackId,
  messageText,
  onClose,
  onSubmitted,
}: {
  feedbackId: number;
  messageText: string;
  onClose: () => void;
  onSubmitted: () => void;
}) {
  const [type, setType] = useState<FeedbackType | ''>('');
  const [description, setDescription] = useState('');
  const [phase, setPhase] = useState<Phase>('editing');
  const [error, setError] = useState<string | null>(null);
  const descriptionId = useId();
  const counterId = useId();

  useEffect(() => {
    if (phase !== 'submitted') return;
    const timer = setTimeout(onClose, CLOSE_AFTER_MS);
    return () => clearTimeout(timer);
  }, [phase, onClose]);

  const max = type === 'other' ? FEEDBACK_OTHER_DESCRIPTION_MAX : FEEDBACK_DESCRIPTION_MAX;
  const plain = toPlainText(messageText);
  const preview = plain.length > PREVIEW_CHARS ? `${plain.slice(0, PREVIEW_CHARS)}...` : plain;

  const submit = async () => {
    if (!type) return setError('Please select a feedback type');
    if (type === 'other' && !description.trim()) return setError("Please provide details for 'Other' feedback");
    setError(null);
    setPhase('submitting');
    try {
      const failure = await submitFeedback(feedbackId, type, description.slice(0, max));
      if (failure !== null) {
        setError(failure || 'Failed to submit feedback');
        setPhase('editing');
        return;
      }
      setPhase('submitted');
      onSubmitted();
    } catch {
      setError('An unexpected error occurred');
      setPhase('editing');
    }
  };

  return (
    <Dialog
      title="Provide Feedback"
      onClose={onClose}
      actions={
        <>
          <button type="button" className="cc-button cc-button--text" onClick={onClose}>
            {phase === 'submitted' ? 'Close' : 'Cancel'}
          </button>
          {phase !== 'submitted' && (
            <button type="button" className="cc-button" onClick={() => void submit()} disabled={phase === 'submitting'}>
              Submit Feedback
            </button>
          )}
        </>
      }
    >
      <p className="cc-preview">{preview}</p>
      {phase === 'submitted' ? (
        <p className="cc-success" role="status">
          {FEEDBACK_THANKS}
        </p>
      ) : (
        <>
          <fieldset className="cc-choices">
            <legend className="cc-sr-only">Feedback type</legend>
            {FEEDBACK_CHOICES.map((choice) => (
              <label key={choice.type} className="cc-choice">
                <input type="radio" name="feedback-type" value={choice.type} checked={type === choice.type} onChange={() => setType(choice.type)} />
                <span>
                  <span className="cc-choice__label">{choice.label}</span>
                  <span className="cc-choice__description">{choice.description}</span>
                </span>
              </label>
            ))}
          </fieldset>
          <label className="cc-field-label" htmlFor={descriptionId}>
            {type === 'other' ? 'Description (required)' : 'Description (optional)'}
          </label>
          <textarea
            id={descriptionId}
            className="cc-textarea"
            rows={3}
            value={description}
            maxLength={max}
            aria-describedby={counterId}
            onChange={(event) => setDescription(event.target.value.slice(0, max))}
          />
          <p id={counterId} className="cc-counter" aria-live="polite">
            {description.length}/{max}
          </p>
          {error && (
            <p className="cc-error-text cc-error-box" role="alert">
              {error}
            </p>
          )}
        </>
      )}
    </Dialog>
  );
}
