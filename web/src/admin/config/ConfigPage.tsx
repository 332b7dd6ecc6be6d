import type { ConfigField, RuntimeConfig } from '@concierge/contract';
import {
  Box,
  Button,
  Card,
  CardContent,
  Dialog,
  DialogActions,
  DialogContent,
  DialogTitle,
  FormControlLabel,
  FormHelperText,
  MenuItem,
  Paper,
  Switch,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useSnackbar } from 'notistack';
import { useState } from 'react';
import { ApiError, api, describeHttpError } from '../../api/client.ts';
import { Page } from '../../app/Layout.tsx';
import { SECTIONS, type FieldSpec } from './fields.ts';

type Value = string | number | boolean;
type Edits = Partial<Record<ConfigField, Value>>;

const CHANGED = { '& .MuiOutlinedInput-notchedOutline': { borderColor: 'warning.main', borderWidth: 2 } };
const show = (value: Value | undefined) => (typeof value === 'boolean' ? (value ? 'true' : 'false') : String(value ?? ''));

/**
 * Bot Config (SPEC §2, §4 "Config editing"): changed fields get an orange
 * border and stop being changed when set back; Save Changes opens a
 * Field / Current Value / New Value table; only changed fields are sent,
 * numbers as numbers; the server's answer replaces the form.
 */
/** An id for a section's heading: one word, or aria-labelledby would read "Discord Feedback" as two ids. */
const sectionId = (title: string) => `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;

export default function ConfigPage() {
  const { enqueueSnackbar } = useSnackbar();
  const queryClient = useQueryClient();
  const config = useQuery({ queryKey: ['config'], queryFn: () => api.get<RuntimeConfig>('/api/config') });
  const [edits, setEdits] = useState<Edits>({});
  const [confirming, setConfirming] = useState(false);
  const [saving, setSaving] = useState(false);

  if (config.isPending) return <Page>Loading...</Page>;
  if (config.isError || !config.data) {
    return (
      <Page>
        <Typography color="error">{describeHttpError(config.error)}</Typography>
      </Page>
    );
  }
  const current = config.data;

  const valueOf = (name: ConfigField): Value => (name in edits ? edits[name]! : (current[name] as Value));
  const edit = (name: ConfigField, value: Value) => {
    setEdits((previous) => {
      const next = { ...previous };
      // A value set back to the original is no longer a change.
      if (show(value) === show(current[name] as Value)) delete next[name];
      else next[name] = value;
      return next;
    });
  };
  const order = SECTIONS.flatMap((section) => section.fields.map((field) => field.name));
  const changed = (Object.keys(edits) as ConfigField[]).sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const specOf = (name: ConfigField) => SECTIONS.flatMap((section) => section.fields).find((field) => field.name === name)!;

  /** Numbers go as numbers; a field left empty or unparsable goes as text so the server names it. */
  const payload = () =>
    Object.fromEntries(
      changed.map((name) => {
        const spec = specOf(name);
        const value = edits[name]!;
        if ((spec.kind === 'integer' || spec.kind === 'decimal') && typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) {
          return [name, Number(value)];
        }
        return [name, value];
      }),
    );

  const save = async () => {
    setSaving(true);
    try {
      const updated = await api.patch<RuntimeConfig>('/api/config', { body: payload() });
      queryClient.setQueryData(['config'], updated);
      setEdits({});
      setConfirming(false);
      enqueueSnackbar('Updated config', { variant: 'success' });
    } catch (error) {
      const text = error instanceof ApiError ? (error.serverMessage ?? error.message) : String(error);
      enqueueSnackbar(`Error updating config: ${text}`, { variant: 'error' });
    } finally {
      setSaving(false);
    }
  };

  return (
    <Page maxWidth={1000}>
      <Typography variant="h1" component="h1" sx={{ mb: 2 }}>
        Bot Config
      </Typography>
      <Box sx={{ display: 'grid', gap: 2, pb: 10 }}>
        {SECTIONS.map((section) => (
          <Card key={section.title} component="section" aria-labelledby={sectionId(section.title)}>
            <CardContent>
              <Typography id={sectionId(section.title)} variant="h2" component="h2" sx={{ mb: 2 }}>
                {section.title}
              </Typography>
              <Box sx={{ display: 'grid', gap: 2, gridTemplateColumns: { xs: '1fr', md: '1fr 1fr' } }}>
                {section.fields.map((field) => (
                  <ConfigInput
                    key={field.name}
                    spec={field}
                    value={valueOf(field.name)}
                    changed={field.name in edits}
                    disabled={field.name === 'openai_truncation_strategy_last_messages' && valueOf('openai_truncation_strategy_type') === 'auto'}
                    onChange={(value) => edit(field.name, value)}
                  />
                ))}
              </Box>
            </CardContent>
          </Card>
        ))}
      </Box>

      <Paper
        square
        elevation={8}
        sx={{ position: 'fixed', bottom: 0, left: 0, right: 0, zIndex: 10, borderTop: 1, borderColor: 'divider' }}
      >
        <Box sx={{ maxWidth: 1000, mx: 'auto', px: 2, py: 1.5, display: 'flex', alignItems: 'center', justifyContent: 'flex-end', gap: 2 }}>
          <Typography variant="body2" color="text.secondary" role="status">
            {changed.length === 0 ? 'No unsaved changes' : `${changed.length} unsaved change${changed.length === 1 ? '' : 's'}`}
          </Typography>
          <Button variant="contained" size="large" disabled={changed.length === 0} onClick={() => setConfirming(true)}>
            Save Changes
          </Button>
        </Box>
      </Paper>

      <Dialog open={confirming} onClose={() => setConfirming(false)} fullWidth maxWidth="md" aria-labelledby="confirm-changes-title">
        <DialogTitle id="confirm-changes-title">Confirm Changes</DialogTitle>
        <DialogContent sx={{ overflowX: 'auto' }}>
          <Table size="small">
            <TableHead>
              <TableRow>
                <TableCell sx={{ fontWeight: 700 }}>Field</TableCell>
                <TableCell sx={{ fontWeight: 700 }}>Current Value</TableCell>
                <TableCell sx={{ fontWeight: 700 }}>New Value</TableCell>
              </TableRow>
            </TableHead>
            <TableBody>
              {changed.map((name) => (
                <TableRow key={name}>
                  <TableCell>{name}</TableCell>
                  <TableCell sx={{ wordBreak: 'break-word' }}>{show(current[name] as Value)}</TableCell>
                  <TableCell sx={{ wordBreak: 'break-word' }}>{show(edits[name])}</TableCell>
                </TableRow>
              ))}
            </TableBody>
          </Table>
        </DialogContent>
        <DialogActions>
          <Button
            onClick={() => {
              // SPEC §4: Cancel in the confirm dialog reverts all edits.
              setEdits({});
              setConfirming(false);
            }}
          >
            Cancel
          </Button>
          <Button variant="contained" onClick={() => void save()} disabled={saving}>
            Confirm
          </Button>
        </DialogActions>
      </Dialog>
    </Page>
  );
}

function ConfigInput({
  spec,
  value,
  changed,
  disabled,
  onChange,
}: {
  spec: FieldSpec;
  value: Value;
  changed: boolean;
  disabled: boolean;
  onChange: (value: Value) => void;
}) {
  if (spec.kind === 'boolean') {
    return (
      <Box sx={{ border: 2, borderColor: changed ? 'warning.main' : 'transparent', borderRadius: 1, px: 1 }} data-changed={changed || undefined}>
        <FormControlLabel control={<Switch checked={Boolean(value)} onChange={(event) => onChange(event.target.checked)} />} label={spec.label} />
        <FormHelperText sx={{ mt: 0 }}>{spec.help}</FormHelperText>
      </Box>
    );
  }
  const common = {
    label: spec.label,
    value: String(value),
    helperText: spec.help,
    disabled,
    fullWidth: true,
    size: 'small' as const,
    sx: changed ? CHANGED : undefined,
    'data-changed': changed || undefined,
    onChange: (event: { target: { value: string } }) => onChange(event.target.value),
  };
  if (spec.kind === 'select') {
    return (
      <TextField select {...common}>
        {spec.options!.map((option) => (
          <MenuItem key={option} value={option}>
            {option}
          </MenuItem>
        ))}
      </TextField>
    );
  }
  if (spec.kind === 'integer' || spec.kind === 'decimal') {
    return <TextField type="number" {...common} slotProps={{ htmlInput: { min: spec.min, max: spec.max, step: spec.kind === 'integer' ? 1 : 0.1 } }} />;
  }
  return <TextField {...common} multiline={spec.kind === 'multiline'} minRows={spec.kind === 'multiline' ? 3 : undefined} maxRows={12} />;
}
