import type { Generated } from 'kysely';

export interface CrawlerRunTable {
  id: Generated<number>;
  url: string;
  hash: string | null;
  /** Name of the knowledge document uploaded for this run. */
  file: string | null;
  /** Comma-separated track names. */
  tracks: string | null;
  error: string | null;
  event_count: Generated<number>;
  speaker_count: Generated<number>;
  forced: Generated<boolean>;
  format: string | null;
  time_zone: string | null;
  changes: string | null;
  file_id: string | null;
  etag: string | null;
  last_modified: string | null;
  duration_ms: number | null;
  /** Held: stored, but the previous schedule stays live until an operator forces a refresh. */
  held: Generated<boolean>;
  warning: string | null;
  created_at: string;
  updated_at: string;
}

export interface CrawlerEventTable {
  id: Generated<number>;
  crawler_run_id: number;
  uid: string;
  track: string | null;
  /** The title. */
  what: string;
  /** Minutes. */
  duration: number | null;
  /** The time as attendees read it, e.g. "Sat 14 Mar 19:00–21:00". */
  when: string | null;
  /** The room. */
  where: string | null;
  /** Comma-separated names. */
  speakers: string | null;
  start_at: string;
  end_at: string | null;
  /** The local day, e.g. "2026-03-14". */
  date: string | null;
  description: string | null;
  status: string;
  created_at: string;
  updated_at: string;
}

/** The crawler's health, one row (id 1): last success, last failure, failures in a row. */
export interface CrawlerHealthTable {
  id: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  consecutive_failures: Generated<number>;
  last_error: string | null;
}
