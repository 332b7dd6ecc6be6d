import { Chip } from '@mui/material';

/** Error when a record has an error, else Success (SPEC §4). */
export function ErrorSuccessChip({ error }: { error: string | null | undefined }) {
  return error ? <Chip size="small" color="error" label="Error" /> : <Chip size="small" color="success" label="Success" />;
}
