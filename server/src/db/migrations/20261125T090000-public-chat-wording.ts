import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The public chat's wording becomes runtime configuration (DESIGN §9
 * "Operator wording"). An existing row gets the texts the chat showed until
 * now; `{product}` stands for PRODUCT_NAME. The values are written out here,
 * not imported, so this migration never changes after it has run.
 */
const WORDING: Record<string, string> = {
  public_chat_welcome_message: "Hi! I'm {product}, your guide to the convention. Ask me about panels, guests, rooms and times — for example:",
  public_chat_example_prompts: "What's on in Hall B tonight?\nWhen is the costume contest?\nWhere are the autograph sessions?\nWhat's happening right now?",
  public_chat_about_text:
    '{product} is an independent, fan-made tool. It is not endorsed by or affiliated with the convention or its organizers.\n\n' +
    'Answers come from the published schedule and can be wrong or out of date — check with convention staff when it matters.',
  public_chat_paused_message: 'The chat service is currently unavailable. Please try again later.',
};

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  // One column per statement: SQLite adds one at a time.
  for (const [column, text] of Object.entries(WORDING)) {
    await db.schema
      .alterTable('runtime_config')
      .addColumn(column, 'text', (col) => col.notNull().defaultTo(text))
      .execute();
  }
}
