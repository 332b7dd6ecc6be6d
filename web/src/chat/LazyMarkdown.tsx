import { lazy, Suspense } from 'react';

const Markdown = lazy(() => import('./Markdown.tsx'));

/**
 * Markdown, its renderer loaded after first paint. Until it arrives the text
 * shows as plain paragraphs (or as the server's rendering, for the welcome),
 * never as raw HTML.
 */
export function LazyMarkdown({ text, html }: { text: string; html?: string | null }) {
  const fallback = html ? (
    // The server rendered it with raw HTML escaped (server/src/http/markdown-html.ts).
    <div className="cc-markdown" dangerouslySetInnerHTML={{ __html: html }} />
  ) : (
    <div className="cc-markdown cc-markdown--plain">{text}</div>
  );
  if (html) return fallback;
  return (
    <Suspense fallback={fallback}>
      <Markdown text={text} />
    </Suspense>
  );
}

/** Starts loading the renderer when a question is on its way (not on first load, which stays light), so the first answer does not wait for it. */
export const preloadMarkdown = () => void import('./Markdown.tsx');
