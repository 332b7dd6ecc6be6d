import { Box, Button, Dialog, DialogActions, DialogContent, DialogTitle, Typography } from '@mui/material';
import type { ReactNode } from 'react';

export interface DetailField {
  label: string;
  value: ReactNode;
  /** Shown in red (record errors, SPEC §8). */
  error?: boolean;
  /** Pre-formatted text (JSON bodies, long text). */
  pre?: boolean;
}

/** A record's fields in a dialog, label over value, errors in red. */
export function DetailsDialog({
  open,
  title,
  fields,
  actions,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  fields: DetailField[];
  actions?: ReactNode;
  onClose: () => void;
  children?: ReactNode;
}) {
  return (
    <Dialog open={open} onClose={onClose} fullWidth maxWidth="md" scroll="paper" aria-labelledby="details-title">
      <DialogTitle id="details-title">{title}</DialogTitle>
      <DialogContent dividers>
        <Box component="dl" sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', sm: '200px 1fr' }, columnGap: 2, rowGap: { xs: 0.25, sm: 1 }, m: 0 }}>
          {fields.map((field) => {
            const empty = field.value === null || field.value === undefined || field.value === '';
            return (
              <Box key={field.label} sx={{ display: 'contents' }}>
                <Typography component="dt" variant="body2" color="text.secondary" sx={{ fontWeight: 600, mt: { xs: 1, sm: 0 } }}>
                  {field.label}
                </Typography>
                <Typography
                  component="dd"
                  variant="body2"
                  sx={{
                    m: 0,
                    // An error in red; no error is a plain N/A.
                    color: field.error && !empty ? 'error.main' : 'text.primary',
                    whiteSpace: field.pre ? 'pre-wrap' : 'normal',
                    fontFamily: field.pre ? 'monospace' : undefined,
                    wordBreak: 'break-word',
                    ...(field.pre ? { bgcolor: 'action.hover', p: 1, borderRadius: 1, maxHeight: 320, overflow: 'auto' } : {}),
                  }}
                >
                  {empty ? 'N/A' : field.value}
                </Typography>
              </Box>
            );
          })}
        </Box>
        {children}
      </DialogContent>
      <DialogActions>
        {actions}
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </Dialog>
  );
}
