import type { DiscordMessage } from '@concierge/contract';
import { Button } from '@mui/material';
import { useState } from 'react';
import { DateTime } from '../../components/DateTime.tsx';
import { prettyJson } from '../../components/format.ts';
import { DetailsDialog } from '../../components/list/DetailsDialog.tsx';
import { ListPage, ORDER_FILTER, type ColumnDef, type FilterDef } from '../../components/list/ListPage.tsx';
import { Truncated } from '../../components/Truncated.tsx';

const FILTERS: FilterDef[] = [
  { name: 'user_id', label: 'User ID', type: 'text' },
  { name: 'channel_id', label: 'Channel ID', type: 'text' },
  { name: 'date_from', label: 'Date From', type: 'datetime' },
  { name: 'date_to', label: 'Date To', type: 'datetime' },
  ORDER_FILTER,
];

/** SPEC §2 "Discord Messages list". */
const COLUMNS: ColumnDef<DiscordMessage>[] = [
  { label: 'ID', render: (row) => row.id, narrow: true },
  { label: 'Username', render: (row) => row.username ?? 'N/A', narrow: true },
  { label: 'ChannelID', render: (row) => row.channel_id ?? 'N/A', narrow: true },
  { label: 'InteractionID', render: (row) => row.interaction_id ?? 'N/A', narrow: true },
  { label: 'Content', render: (row) => <Truncated text={row.content} max={50} />, wide: true },
];

/** Discord Messages (SPEC §2): mentions of the bot, replies to it and direct messages, newest first. */
export default function DiscordMessagesPage() {
  const [selected, setSelected] = useState<DiscordMessage | null>(null);
  return (
    <ListPage<DiscordMessage>
      title="Discord Messages"
      endpoint="/api/discord_messages"
      filters={FILTERS}
      columns={COLUMNS}
      actions={(row) => (
        <Button size="small" onClick={() => setSelected(row)}>
          View Details
        </Button>
      )}
    >
      {selected && (
        <DetailsDialog
          open
          title="Message Details"
          onClose={() => setSelected(null)}
          fields={[
            { label: 'ID', value: selected.id },
            { label: 'Message ID', value: selected.message_id },
            { label: 'Username', value: selected.username },
            { label: 'Global Name', value: selected.global_name },
            { label: 'User ID', value: selected.user_id },
            { label: 'Channel ID', value: selected.channel_id },
            { label: 'Guild ID', value: selected.guild_id },
            { label: 'Interaction ID', value: selected.interaction_id },
            { label: 'Replying To', value: selected.referenced_message_id },
            { label: 'Content', value: selected.content, pre: true },
            { label: 'Created', value: <DateTime value={selected.created_at} /> },
            { label: 'Updated', value: <DateTime value={selected.updated_at} /> },
            { label: 'Payload', value: prettyJson(selected.payload), pre: true },
          ]}
        />
      )}
    </ListPage>
  );
}
