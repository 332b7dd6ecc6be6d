import { Tooltip } from '@mui/material';
import { cut } from './format.ts';

/** Text cut to `max` characters, the whole text on hover. */
export function Truncated({ text, max, empty = 'N/A' }: { text: string | null | undefined; max: number; empty?: string }) {
  const shown = cut(text, max, empty);
  if (!text || shown === text) return <>{shown}</>;
  return (
    <Tooltip title={<span style={{ whiteSpace: 'pre-wrap' }}>{text}</span>}>
      <span>{shown}</span>
    </Tooltip>
  );
}
