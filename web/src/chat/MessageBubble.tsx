import type { Source } from '@concierge/contract';
import DescriptionOutlined from '@mui/icons-material/DescriptionOutlined';
import RateReviewOutlined from '@mui/icons-material/RateReviewOutlined';
import { Box, Chip, IconButton, Paper, Stack, Tooltip, Typography } from '@mui/material';
import { keyframes } from '@mui/material/styles';
import { useState } from 'react';
import { FeedbackDialog } from './FeedbackDialog.tsx';
import { Markdown } from './Markdown.tsx';

/** SPEC §3 "Client chat message", plus the sources an answer cites. */
export interface ChatMessage {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  timestamp: string;
  feedbackId?: number;
  feedbackSubmitted?: boolean;
  sources?: Source[];
  /** An error bubble rather than an answer. */
  error?: boolean;
  /** An error bubble whose text is the operator's markdown (the paused message). */
  markdown?: boolean;
  /** Example prompts offered under the welcome message. */
  examples?: string[];
}

export function MessageBubble({
  message,
  onExample,
  examplesDisabled,
  onFeedbackSubmitted,
}: {
  message: ChatMessage;
  onExample: (prompt: string) => void;
  examplesDisabled: boolean;
  onFeedbackSubmitted: () => void;
}) {
  const [feedbackOpen, setFeedbackOpen] = useState(false);
  const mine = message.role === 'user';
  return (
    <Box sx={{ display: 'flex', justifyContent: mine ? 'flex-end' : 'flex-start' }} data-role={message.role}>
      <Paper
        elevation={0}
        sx={{
          maxWidth: { xs: '88%', sm: '78%' },
          px: 1.75,
          py: 1.25,
          borderRadius: 3,
          borderTopRightRadius: mine ? 6 : 24,
          borderTopLeftRadius: mine ? 24 : 6,
          bgcolor: mine ? 'primary.main' : message.error ? 'error.50' : 'background.paper',
          color: mine ? 'primary.contrastText' : message.error ? 'error.dark' : 'text.primary',
          border: mine ? 'none' : 1,
          borderColor: message.error ? 'error.light' : 'divider',
        }}
      >
        {mine ? (
          <Typography sx={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>{message.text}</Typography>
        ) : message.error ? (
          <Box role="alert">{message.markdown ? <Markdown text={message.text} /> : <Typography>{message.text}</Typography>}</Box>
        ) : (
          <Markdown text={message.text} />
        )}
        {message.examples && message.examples.length > 0 && (
          <Stack direction="row" sx={{ flexWrap: 'wrap', gap: 1, mt: 1.5 }}>
            {message.examples.map((prompt) => (
              <Chip key={prompt} label={prompt} onClick={() => onExample(prompt)} disabled={examplesDisabled} variant="outlined" color="primary" clickable />
            ))}
          </Stack>
        )}
        {(message.sources?.length || message.feedbackId) && (
          <Stack direction="row" sx={{ alignItems: 'center', flexWrap: 'wrap', gap: 0.75, mt: 1 }}>
            {message.sources?.map((source) => (
              <Chip
                key={`${source.kind}:${source.event_uid ?? source.file_id ?? source.title}`}
                size="small"
                icon={<DescriptionOutlined />}
                label={source.title}
                variant="outlined"
                title={`Source: ${source.title}`}
              />
            ))}
            <Box sx={{ flex: 1 }} />
            {message.feedbackId !== undefined && (
              <Tooltip title={message.feedbackSubmitted ? 'Thank you for your feedback!' : 'Provide feedback on this response'}>
                <span>
                  <IconButton
                    size="small"
                    aria-label={message.feedbackSubmitted ? 'Thank you for your feedback!' : 'Provide feedback on this response'}
                    onClick={() => setFeedbackOpen(true)}
                    disabled={message.feedbackSubmitted}
                  >
                    <RateReviewOutlined fontSize="small" />
                  </IconButton>
                </span>
              </Tooltip>
            )}
          </Stack>
        )}
      </Paper>
      {message.feedbackId !== undefined && (
        <FeedbackDialog
          open={feedbackOpen}
          feedbackId={message.feedbackId}
          messageText={message.text}
          onClose={() => setFeedbackOpen(false)}
          onSubmitted={onFeedbackSubmitted}
        />
      )}
    </Box>
  );
}

const blink = keyframes`
  0%, 80%, 100% { opacity: 0.25; }
  40% { opacity: 1; }
`;

/** '{product} is thinking...' while an answer is on its way. */
export function ThinkingBubble({ productName }: { productName: string }) {
  return (
    <Box sx={{ display: 'flex' }} role="status">
      <Paper elevation={0} sx={{ px: 1.75, py: 1.25, borderRadius: 3, borderTopLeftRadius: 6, border: 1, borderColor: 'divider', display: 'flex', gap: 1, alignItems: 'center' }}>
        <Stack direction="row" spacing={0.5} aria-hidden>
          {[0, 1, 2].map((dot) => (
            <Box key={dot} sx={{ width: 7, height: 7, borderRadius: '50%', bgcolor: 'primary.main', animation: `${blink} 1.2s ${dot * 0.2}s infinite ease-in-out` }} />
          ))}
        </Stack>
        <Typography variant="body2" color="text.secondary">
          {productName} is thinking...
        </Typography>
      </Paper>
    </Box>
  );
}
