import {
  Alert,
  Button,
  Dialog,
  DialogActions,
  DialogContent,
  DialogTitle,
  FormControl,
  FormControlLabel,
  FormHelperText,
  Radio,
  RadioGroup,
  TextField,
  Typography,
} from '@mui/material';
import { FEEDBACK_CHOICES, FEEDBACK_DESCRIPTION_MAX, FEEDBACK_OTHER_DESCRIPTION_MAX, type FeedbackType } from '@concierge/contract';
import { useEffect, useState } from 'react';
import { submitFeedback } from './chat-api.ts';

const PREVIEW_CHARS = 200;
const CLOSE_AFTER_MS = 1500;
export const FEEDBACK_THANKS = 'Thank you for your feedback! It helps us improve our responses.';

type Phase = 'editing' | 'submitting' | 'submitted';

/** 'Provide Feedback' (SPEC §2, §5): type, optional description, submit. */
export function FeedbackDialog({
  open,
  feedbackId,
  messageText,
  onClose,
  onSubmitted,
}: {
  open: boolean;
  feedbackId: number;
  messageText: string;
  onClose: () => void;
  onSubmitted: () => void;
}) {
  const [type, setType] = useState<FeedbackType | ''>('');
  const [description, setDescription] = useState('');
  const [phase, setPhase] = useState<Phase>('editing');
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (open) {
      setType('');
      setDescription('');
      setPhase('editing');
      setError(null);
    }
  }, [open]);

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
      if (failure) {
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
    <Dialog open={open} onClose={onClose} fullWidth maxWidth="sm" aria-labelledby="feedback-dialog-title">
      <DialogTitle id="feedback-dialog-title">Provide Feedback</DialogTitle>
      <DialogContent>
        <Typography variant="body2" color="text.secondary" sx={{ mb: 2, p: 1.5, bgcolor: 'action.hover', borderRadius: 1, whiteSpace: 'pre-wrap' }}>
          {preview}
        </Typography>
        {phase === 'submitted' ? (
          <Alert severity="success">{FEEDBACK_THANKS}</Alert>
        ) : (
          <>
            <FormControl component="fieldset" sx={{ width: '100%' }}>
              <RadioGroup aria-label="Feedback type" value={type} onChange={(event) => setType(event.target.value as FeedbackType)}>
                {FEEDBACK_CHOICES.map((choice) => (
                  <FormControlLabel
                    key={choice.type}
                    value={choice.type}
                    control={<Radio />}
                    sx={{ alignItems: 'flex-start', mb: 0.5, '& .MuiRadio-root': { pt: 0.5 } }}
                    label={
                      <span>
                        <Typography component="span" sx={{ fontWeight: 600, display: 'block' }}>
                          {choice.label}
                        </Typography>
                        <Typography component="span" variant="body2" color="text.secondary">
                          {choice.description}
                        </Typography>
                      </span>
                    }
                  />
                ))}
              </RadioGroup>
            </FormControl>
            <TextField
              label={type === 'other' ? 'Description (required)' : 'Description (optional)'}
              value={description}
              onChange={(event) => setDescription(event.target.value.slice(0, max))}
              multiline
              minRows={3}
              fullWidth
              sx={{ mt: 1 }}
              slotProps={{ htmlInput: { maxLength: max } }}
            />
            <FormHelperText sx={{ textAlign: 'right' }} aria-live="polite">
              {description.length}/{max}
            </FormHelperText>
            {error && (
              <Alert severity="error" role="alert" sx={{ mt: 1 }}>
                {error}
              </Alert>
            )}
          </>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>{phase === 'submitted' ? 'Close' : 'Cancel'}</Button>
        {phase !== 'submitted' && (
          <Button variant="contained" onClick={submit} disabled={phase === 'submitting'}>
            Submit Feedback
          </Button>
        )}
      </DialogActions>
    </Dialog>
  );
}

/** The answer without Markdown syntax, for the short preview. */
function toPlainText(markdown: string): string {
  return markdown
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+)/gm, '')
    .replace(/[*_`~]+/g, '')
    .replace(/\n{2,}/g, '\n')
    .trim();
}
