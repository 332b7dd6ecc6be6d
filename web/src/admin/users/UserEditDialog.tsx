import { LIMIT_24H_FACTOR, type User, type UserPatch } from '@concierge/contract';
import {
  Box,
  Button,
  Dialog,
  DialogActions,
  DialogContent,
  DialogTitle,
  FormControlLabel,
  MenuItem,
  Stack,
  Switch,
  TextField,
} from '@mui/material';
import { useSnackbar } from 'notistack';
import { useState } from 'react';
import { ApiError, api } from '../../api/client.ts';

type FlagField = 'priority' | 'donated' | 'ignored';
type NumberField = 'request_limit_6h' | 'request_limit_24h' | 'openai_max_completion_tokens' | 'openai_max_prompt_tokens' | 'openai_truncation_strategy_last_messages';
type TextField_ = 'openai_truncation_strategy_type' | 'assistant_additional_instructions' | 'assistant_poll_interval' | 'assistant_max_poll_interval';
type EditableField = FlagField | NumberField | TextField_;
type FormValue = string | boolean;
type Form = Record<EditableField, FormValue>;

const FLAGS: { name: FlagField; label: string }[] = [
  { name: 'priority', label: 'Priority' },
  { name: 'donated', label: 'Donated' },
  { name: 'ignored', label: 'Ignored' },
];

/** SPEC §5 "User edit": whole numbers with their minimum; empty puts the user back on the global setting. */
const NUMBERS: { name: NumberField; label: string; min: number }[] = [
  { name: 'request_limit_6h', label: 'Request limit 6h', min: 1 },
  { name: 'request_limit_24h', label: 'Request limit 24h', min: 1 },
  { name: 'openai_max_completion_tokens', label: 'Max completion tokens', min: 0 },
  { name: 'openai_max_prompt_tokens', label: 'Max prompt tokens', min: 0 },
  { name: 'openai_truncation_strategy_last_messages', label: 'Truncation last messages', min: 1 },
];

const FIELDS: EditableField[] = [
  'priority',
  'donated',
  'ignored',
  'request_limit_6h',
  'request_limit_24h',
  'openai_truncation_strategy_type',
  'openai_truncation_strategy_last_messages',
  'openai_max_completion_tokens',
  'openai_max_prompt_tokens',
  'assistant_poll_interval',
  'assistant_max_poll_interval',
  'assistant_additional_instructions',
];

/** The orange mark of a changed field (as on the Config screen). */
const CHANGED = { '& .MuiOutlinedInput-notchedOutline': { borderColor: 'warning.main', borderWidth: 2 } };

function formOf(user: User): Form {
  const form = {} as Form;
  for (const name of FIELDS) {
    const value = user[name];
    form[name] = typeof value === 'boolean' ? value : value === null || value === undefined ? '' : String(value);
  }
  return form;
}

const isNumberField = (name: EditableField): name is NumberField => NUMBERS.some((field) => field.name === name);

/** What is wrong with a field's value (SPEC §5), or null. */
export function fieldError(name: EditableField, form: Form): string | null {
  const spec = NUMBERS.find((field) => field.name === name);
  if (spec) {
    const text = String(form[name]).trim();
    if (text === '') return null;
    const value = Number(text);
    if (!Number.isInteger(value)) return 'Must be a whole number';
    if (value < spec.min) return `Must be at least ${spec.min}`;
    if (name === 'request_limit_24h' && String(form.request_limit_6h).trim() !== '' && value < Number(form.request_limit_6h)) {
      return 'Must not be below the 6h limit';
    }
  }
  return null;
}

/** The changed fields as PATCH takes them: numbers as numbers, empty as null (the global setting). */
function patchOf(form: Form, original: Form): UserPatch {
  const patch: Record<string, unknown> = {};
  for (const name of FIELDS) {
    if (form[name] === original[name]) continue;
    const value = form[name];
    if (typeof value === 'boolean') patch[name] = value;
    else if (value.trim() === '') patch[name] = null;
    else patch[name] = isNumberField(name) ? Number(value) : value;
  }
  return patch as UserPatch;
}

/**
 * What an empty 24 h limit means for this user: 4 × their 6 h limit (DESIGN
 * §8), following an edit of the 6 h field; unknown when neither is known here.
 */
function default24h(form: Form, user: User): string | undefined {
  const typed = String(form.request_limit_6h).trim();
  if (typed !== '' && Number.isInteger(Number(typed))) return String(LIMIT_24H_FACTOR * Number(typed));
  // An empty 6 h field is the global limit, which the list's figures show while the user has no override.
  if (user.request_limit_6h === null && user.limit_6h !== undefined) return String(LIMIT_24H_FACTOR * user.limit_6h);
  return undefined;
}

/**
 * The edit dialog (SPEC §2, §4 "User edit", §5): username and global name
 * read-only, changed fields orange, Save sending only what changed; the
 * saved user goes back to the list and 'Updated user {id}' shows.
 */
export function UserEditDialog({ user, onClose, onSaved }: { user: User; onClose: () => void; onSaved: (user: User) => void }) {
  const { enqueueSnackbar } = useSnackbar();
  const original = formOf(user);
  const [form, setForm] = useState<Form>(original);
  const [saving, setSaving] = useState(false);
  const changed = FIELDS.filter((name) => form[name] !== original[name]);
  const errors = Object.fromEntries(FIELDS.map((name) => [name, fieldError(name, form)])) as Record<EditableField, string | null>;
  const invalid = FIELDS.some((name) => errors[name] !== null);
  const set = (name: EditableField, value: FormValue) => setForm((current) => ({ ...current, [name]: value }));
  const mark = (name: EditableField) => (changed.includes(name) ? CHANGED : undefined);

  const save = async () => {
    setSaving(true);
    try {
      const updated = await api.patch<User>(`/api/user/${user.id}`, { body: patchOf(form, original) });
      enqueueSnackbar(`Updated user ${user.id}`, { variant: 'success' });
      onSaved(updated);
    } catch (error) {
      // SPEC §8: an update failure shows the error JSON.
      enqueueSnackbar(error instanceof ApiError ? JSON.stringify(error.body) : String(error), { variant: 'error' });
    } finally {
      setSaving(false);
    }
  };

  const numberField = (name: NumberField, label: string, min: number, placeholder?: string, disabled = false) => (
    <TextField
      key={name}
      size="small"
      type="number"
      label={label}
      value={form[name]}
      disabled={disabled}
      onChange={(event) => set(name, event.target.value)}
      error={errors[name] !== null}
      helperText={errors[name] ?? (placeholder !== undefined ? `Empty: the global setting (${placeholder})` : 'Empty: the global setting')}
      placeholder={placeholder}
      slotProps={{ htmlInput: { min, step: 1, inputMode: 'numeric' }, inputLabel: { shrink: true } }}
      sx={mark(name)}
      data-changed={changed.includes(name) || undefined}
    />
  );

  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="sm" scroll="paper" aria-labelledby="edit-user-title">
      <DialogTitle id="edit-user-title">Edit user {user.id}</DialogTitle>
      <DialogContent dividers>
        <Stack spacing={2}>
          <TextField size="small" label="Username" value={user.username} slotProps={{ input: { readOnly: true } }} />
          <TextField size="small" label="Global Name" value={user.global_name ?? ''} slotProps={{ input: { readOnly: true }, inputLabel: { shrink: true } }} />
          <Stack direction="row" spacing={1} sx={{ flexWrap: 'wrap' }}>
            {FLAGS.map((flag) => (
              <Box
                key={flag.name}
                sx={{ border: 2, borderColor: changed.includes(flag.name) ? 'warning.main' : 'transparent', borderRadius: 1, px: 1 }}
                data-changed={changed.includes(flag.name) || undefined}
              >
                <FormControlLabel control={<Switch checked={form[flag.name] === true} onChange={(event) => set(flag.name, event.target.checked)} />} label={flag.label} />
              </Box>
            ))}
          </Stack>
          <Box sx={{ display: 'grid', gap: 2, gridTemplateColumns: { xs: '1fr', sm: '1fr 1fr' } }}>
            {numberField('request_limit_6h', 'Request limit 6h', 1, user.request_limit_6h === null && user.limit_6h !== undefined ? String(user.limit_6h) : undefined)}
            {numberField('request_limit_24h', 'Request limit 24h', 1, default24h(form, user))}
            <TextField
              select
              size="small"
              label="Truncation strategy"
              value={form.openai_truncation_strategy_type}
              onChange={(event) => set('openai_truncation_strategy_type', event.target.value)}
              helperText=" "
              slotProps={{ inputLabel: { shrink: true }, select: { displayEmpty: true } }}
              sx={mark('openai_truncation_strategy_type')}
              data-changed={changed.includes('openai_truncation_strategy_type') || undefined}
            >
              <MenuItem value="">Global setting</MenuItem>
              <MenuItem value="auto">auto</MenuItem>
              <MenuItem value="last_messages">last_messages</MenuItem>
            </TextField>
            {numberField('openai_truncation_strategy_last_messages', 'Truncation last messages', 1, undefined, form.openai_truncation_strategy_type === 'auto')}
            {numberField('openai_max_completion_tokens', 'Max completion tokens', 0)}
            {numberField('openai_max_prompt_tokens', 'Max prompt tokens', 0)}
            <TextField
              size="small"
              label="Poll interval"
              value={form.assistant_poll_interval}
              onChange={(event) => set('assistant_poll_interval', event.target.value)}
              helperText="e.g. 3s; empty: the global setting"
              slotProps={{ inputLabel: { shrink: true } }}
              sx={mark('assistant_poll_interval')}
              data-changed={changed.includes('assistant_poll_interval') || undefined}
            />
            <TextField
              size="small"
              label="Max poll interval"
              value={form.assistant_max_poll_interval}
              onChange={(event) => set('assistant_max_poll_interval', event.target.value)}
              helperText="e.g. 30s; empty: the global setting"
              slotProps={{ inputLabel: { shrink: true } }}
              sx={mark('assistant_max_poll_interval')}
              data-changed={changed.includes('assistant_max_poll_interval') || undefined}
            />
          </Box>
          <TextField
            label="Additional instructions"
            multiline
            minRows={3}
            value={form.assistant_additional_instructions}
            onChange={(event) => set('assistant_additional_instructions', event.target.value)}
            helperText="Added to the assistant's instructions for this user's questions"
            slotProps={{ inputLabel: { shrink: true } }}
            sx={mark('assistant_additional_instructions')}
            data-changed={changed.includes('assistant_additional_instructions') || undefined}
          />
        </Stack>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button variant="contained" onClick={() => void save()} disabled={saving || changed.length === 0 || invalid}>
          Save
        </Button>
      </DialogActions>
    </Dialog>
  );
}
