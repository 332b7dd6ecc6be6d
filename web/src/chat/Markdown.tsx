import { memo } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { markdownPieces } from './markdown-pieces.ts';

/** A heading in an answer sits one level under the page's own h1: # becomes h2, ## h3, and so on. */
const components: Components = {
  h1: ({ children }) => <h2>{children}</h2>,
  h2: ({ children }) => <h3>{children}</h3>,
  h3: ({ children }) => <h4>{children}</h4>,
  h4: ({ children }) => <h5>{children}</h5>,
  h5: ({ children }) => <h6>{children}</h6>,
  // Links leave the chat in a new tab, without access back to it.
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
};

/**
 * Markdown (GFM), a long answer in pieces (markdownPieces), with any raw HTML dropped and unsafe link protocols
 * removed (react-markdown's defaults). A half-streamed answer is Markdown
 * too: an unclosed `**` shows as text until its end arrives.
 */
export default function Markdown({ text }: { text: string }) {
  const pieces = markdownPieces(text);
  return (
    <div className="cc-markdown">
      {pieces.map((piece, index) => (
        <MarkdownPiece key={index} text={piece} />
      ))}
    </div>
  );
}

/** One piece of a long answer (markdownPieces): parsed again only when its own text changes. */
const MarkdownPiece = memo(function MarkdownPiece({ text }: { text: string }) {
  return (
    <ReactMarkdown remarkPlugins={[remarkGfm]} skipHtml components={components}>
      {text}
    </ReactMarkdown>
  );
});
