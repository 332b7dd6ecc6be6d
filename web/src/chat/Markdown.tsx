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

/**
 * Markdown (GFM) with any raw HTML dropped and unsafe link protocols
 * removed (react-markdown's defaults). A half-streamed answer is Markdown
 * too: an unclosed `**` shows as text until its end arrives.
 */
export default function Markdown({ text }: { text: string }) {
  return (
    <div className="cc-markdown">
      <ReactMarkdown remarkPlugins={[remarkGfm]} skipHtml components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
