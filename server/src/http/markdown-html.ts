import { micromark } from 'micromark';
import { gfm, gfmHtml } from 'micromark-extension-gfm';

const cache = new Map<string, string>();
const CACHE_LIMIT = 16;

/**
 * Operator Markdown (the chat's welcome) as HTML for the page the server
 * sends, so the welcome shows before the markdown renderer loads. Safe by
 * micromark's defaults: raw HTML is escaped, never passed through, and
 * link targets with a dangerous protocol (javascript:, data:…) are
 * dropped. Links open in a new tab and headings step one level below
 * the page's h1, as in the chat's own renderer (web/src/chat/Markdown.tsx).
 */
export function markdownToSafeHtml(markdown: string): string {
  let html = cache.get(markdown);
  if (html === undefined) {
    html = micromark(markdown, { extensions: [gfm()], htmlExtensions: [gfmHtml()] })
      .replace(/<a href="/g, '<a target="_blank" rel="noopener noreferrer" href="')
      // Headings sit one level under the page's h1, as in the chat's renderer: # is h2, ## h3, and so on.
      .replace(/<(\/?)h([1-6])>/g, (_tag, close: string, level: string) => `<${close}h${Math.min(Number(level) + 1, 6)}>`);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(markdown, html);
  }
  return html;
}
