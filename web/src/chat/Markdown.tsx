import { Box } from '@mui/material';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';

const components: Components = {
  // Links leave the chat in a new tab, without access back to it.
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
};

/** An answer rendered as Markdown (GFM), with any raw HTML dropped. */
export function Markdown({ text }: { text: string }) {
  return (
    <Box
      sx={{
        '& > :first-of-type': { mt: 0 },
        '& > :last-child': { mb: 0 },
        '& p': { my: 1 },
        '& ul, & ol': { pl: 2.5, my: 1 },
        '& li + li': { mt: 0.5 },
        '& blockquote': { borderLeft: 3, borderColor: 'divider', m: 0, my: 1, pl: 1.5, color: 'text.secondary' },
        '& a': { color: 'primary.main', wordBreak: 'break-word' },
        '& table': { borderCollapse: 'collapse', display: 'block', overflowX: 'auto' },
        '& th, & td': { border: 1, borderColor: 'divider', px: 1, py: 0.5 },
        '& code': { fontSize: '0.9em' },
        wordBreak: 'break-word',
      }}
    >
      <ReactMarkdown remarkPlugins={[remarkGfm]} skipHtml components={components}>
        {text}
      </ReactMarkdown>
    </Box>
  );
}
