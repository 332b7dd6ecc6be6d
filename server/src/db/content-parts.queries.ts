import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Db } from './database.ts';

/** Bytes per part: one part is written (or read) in a few milliseconds. */
const PART_BYTES = 256 * 1024;
/** Parts read per query. */
const PARTS_PER_READ = 8;

/**
 * A file's content stored in parts, each written in its own statement with
 * the event loop free between them: node:sqlite is synchronous, and one
 * 20 MB value would hold the main thread for a long moment.
 */
export async function writeParts(db: Db, owner: string, content: Uint8Array): Promise<void> {
  for (let offset = 0, part = 0; offset < content.length || part === 0; offset += PART_BYTES, part++) {
    await db.insertInto('content_parts').values({ owner, part, data: content.subarray(offset, offset + PART_BYTES) }).execute();
    await yieldToEventLoop();
  }
}

export async function readParts(db: Db, owner: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for (let from = 0; ; from += PARTS_PER_READ) {
    const rows = await db
      .selectFrom('content_parts')
      .select('data')
      .where('owner', '=', owner)
      .where('part', '>=', from)
      .where('part', '<', from + PARTS_PER_READ)
      .orderBy('part')
      .execute();
    for (const row of rows) chunks.push(row.data);
    if (rows.length < PARTS_PER_READ) break;
    await yieldToEventLoop();
  }
  return Buffer.concat(chunks);
}

export const deleteParts = (db: Db, owner: string) => db.deleteFrom('content_parts').where('owner', '=', owner).execute();
