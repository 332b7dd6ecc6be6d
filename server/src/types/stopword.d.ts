/** The part of `stopword` (no bundled types) the offline assistant uses: its English stop word list. */
declare module 'stopword' {
  export const eng: string[];
}
