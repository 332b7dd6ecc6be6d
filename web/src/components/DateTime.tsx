import { Tooltip } from '@mui/material';
import { formatDateTime } from './format.ts';

/**
 * A time as the console shows every time (DESIGN §9): the convention's zone on
 * a 24-hour clock, the raw ISO value on hover; N/A when there is none.
 */
export function DateTime({ value }: { value: string | null | undefined }) {
  if (!value) return <>N/A</>;
  return (
    <Tooltip title={value}>
      <time dateTime={value}>{formatDateTime(value)}</time>
    </Tooltip>
  );
}
