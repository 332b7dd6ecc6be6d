/** About how long one piece of a long answer is (characters). */
const PIECE_LENGTH = 4000;
const FENCE = /^ {0,3}(```|~~~)/;
/** A line that starts a list item at the margin (a long list is cut between its items). */
const LIST_ITEM = /^([-*+]|\d{1,9}[.)]) /;

/**
 * A long answer's Markdown split into pieces of about PIECE_LENGTH
 * characters, each drawn on its own: outside a code block, at a blank line
 * before a line that does not continue the block above (not indented), or
 * between the items of a list (an ordered list keeps its numbers). A
 * streamed answer keeps its pieces as it grows (each cut depends only on
 * what comes before it), so only the last piece is parsed again, and a long
 * restored answer is drawn in parts the browser can pause between.
 */
export function markdownPieces(text: string): string[] {
  if (text.length <= PIECE_LENGTH) return [text];
  const pieces: string[] = [];
  let current: string[] = [];
  let length = 0;
  let inFence = false;
  let afterBlank = false;
  for (const line of text.split('\n')) {
    const blank = line.trim() === '';
    if (!blank && (afterBlank || LIST_ITEM.test(line)) && !inFence && length >= PIECE_LENGTH && !/^[ \t]/.test(line)) {
      pieces.push(current.join('\n'));
      current = [];
      length = 0;
    }
    if (FENCE.test(line)) inFence = !inFence;
    current.push(line);
    length += line.length + 1;
    afterBlank = blank;
  }
  pieces.push(current.join('\n'));
  return pieces;
}
