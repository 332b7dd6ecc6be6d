/**
 * `npm run fake-discord`: the fake Discord on its own, for trying the bot
 * without a Discord application. Start it, start the product against it,
 * then play an attendee with curl; every message the bot posts is printed
 * here (ephemeral ones marked as such, buttons listed under them).
 */
import { startFakeDiscord, type FakeMessage } from './fake-discord.ts';

const port = Number(process.env.FAKE_DISCORD_PORT ?? 8091);

const describe = (message: FakeMessage) => {
  const buttons = message.components
    .flatMap((row) => ((row as { components?: { label?: string; custom_id?: string; disabled?: boolean }[] }).components ?? []))
    .map((button) => `[${button.label}${button.disabled ? ', disabled' : ''} → ${button.custom_id}]`)
    .join(' ');
  const where = message.ephemeral ? 'ephemeral' : `#${fake.channels[channelKey(message.channel_id)]?.name ?? message.channel_id}`;
  return `message ${message.id} (${where}, by ${message.author.username})${message.loading ? ' is thinking…' : ''}\n${message.content}${buttons ? `\n${buttons}` : ''}`;
};
const channelKey = (id: string) => (Object.keys(fake.channels) as (keyof typeof fake.channels)[]).find((key) => fake.channels[key].id === id) ?? 'general';

const fake = await startFakeDiscord({
  port,
  token: process.env.FAKE_DISCORD_TOKEN ?? 'fake-discord-bot-token',
  applicationId: process.env.FAKE_DISCORD_APPLICATION_ID ?? '1100000000000000001',
  fixedIds: true,
  onMessage: (message, change) => console.log(`\n— ${change}: ${describe(message)}`),
  onModal: (interaction) => {
    const modal = interaction.modal as { title?: string; components?: { label?: string; component?: { custom_id?: string; placeholder?: string } }[] };
    const fields = (modal.components ?? []).map((component) => `${component.label} (${component.component?.custom_id}${component.component?.placeholder ? `, "${component.component.placeholder}"` : ''})`);
    console.log(`\n— form "${modal.title}" shown to ${interaction.user.username} (interaction ${interaction.id}): ${fields.join(', ')}`);
  },
});

const control = `${fake.url}/__control`;
console.log(`Fake Discord listening on ${fake.url} (gateway ${fake.gatewayUrl})`);
console.log(`Run the product against it:\n  DISCORD_API_URL=${fake.apiUrl} DISCORD_TOKEN=${fake.token} DISCORD_APPLICATION_ID=${fake.applicationId} npm start`);
console.log(`Notification channel id: ${fake.channels.notifications.id}; donor role id: ${fake.guild.roles.donor}`);
console.log('Play an attendee:');
console.log(`  curl -d '{"command":"ask","question":"When is the costume contest?","user":"alice"}' ${control}/command`);
console.log(`  curl -d '{"command":"whisper","question":"Where is lost and found?","user":"alice"}' ${control}/command`);
console.log(`  curl -d '{"message_id":"<id>","custom_id":"fb:good:<ask command id>","user":"bob"}' ${control}/click`);
console.log(`  curl -d '{"interaction_id":"<id of the click that opened the form>","values":{"description":"The room moved"}}' ${control}/modal`);
console.log(`  curl -d '{"content":"are you there?","user":"alice"}' ${control}/message      (a mention of the bot)`);
console.log(`  curl -d '{"code":4000}' ${control}/disconnect    curl ${control}    curl ${control}/messages`);

const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
