import { createHash } from 'node:crypto';
import type { RuntimeConfig } from '@concierge/contract';
import { ApplicationIntegrationType, InteractionContextType, SlashCommandBuilder, type RESTPutAPIApplicationCommandsJSONBody } from 'discord.js';

/** The question option of /ask and /whisper. */
export const QUESTION_OPTION = 'question';

/** The runtime configuration fields the command definitions are made of: a change re-registers them. */
export const COMMAND_FIELDS = [
  'ask_command_description',
  'ask_command_option_description',
  'ask_command_min_length',
  'ask_command_max_length',
  'whisper_command_description',
  'whisper_command_option_description',
] as const satisfies readonly (keyof RuntimeConfig)[];

/**
 * `/ask question:`, `/whisper question:` and `/forget` (DESIGN §9), with the
 * operator's descriptions and question lengths; usable in the convention's
 * server and in a DM with the bot.
 */
export function commandDefinitions(config: RuntimeConfig): RESTPutAPIApplicationCommandsJSONBody {
  const question = (command: SlashCommandBuilder, description: string) =>
    command.addStringOption((option) =>
      option.setName(QUESTION_OPTION).setDescription(description).setRequired(true).setMinLength(config.ask_command_min_length).setMaxLength(config.ask_command_max_length),
    );
  const base = (name: string, description: string) =>
    new SlashCommandBuilder()
      .setName(name)
      .setDescription(description)
      .setIntegrationTypes(ApplicationIntegrationType.GuildInstall)
      .setContexts(InteractionContextType.Guild, InteractionContextType.BotDM);
  return [
    question(base('ask', config.ask_command_description), config.ask_command_option_description).toJSON(),
    question(base('whisper', config.whisper_command_description), config.whisper_command_option_description).toJSON(),
    base('forget', 'Start a new conversation with the concierge').toJSON(),
  ];
}

/** Identifies a set of definitions, so a start registers them only after they changed. */
export const commandsHash = (definitions: RESTPutAPIApplicationCommandsJSONBody) => createHash('sha256').update(JSON.stringify(definitions)).digest('hex');
