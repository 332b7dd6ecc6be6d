/** Six chip colours; a track always gets the same one (a hash of its name), so it reads the same on every reload. */
export const TRACK_COLOURS = ['#3949ab', '#00897b', '#d81b60', '#f4511e', '#6d4c41', '#8e24aa'] as const;

export function trackColour(track: string): string {
  let hash = 0;
  for (const char of track) hash = (Math.imul(hash, 31) + char.codePointAt(0)!) >>> 0;
  return TRACK_COLOURS[hash % TRACK_COLOURS.length]!;
}
