/** An answer without its Markdown syntax: for the feedback preview, the clipboard's plain text and screen readers. */
export function toPlainText(markdown: string): string {
  return markdown
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+)/gm, '')
    .replace(/^\s*\|?\s*:?-{3,}.*$/gm, '')
    .replace(/[*_`~]+/g, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
