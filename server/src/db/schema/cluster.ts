import type { Generated } from 'kysely';

/** A running total of the Status screen, shared by every process (name → value). */
export interface StatusCounterTable {
  name: string;
  value: number;
}

/** A request rate shared by every process: when its next request may go. */
export interface RateBudgetTable {
  name: string;
  next_slot_ms: number;
}

/** A cross-process event too big for a NOTIFY payload; the notification carries its id. */
export interface ClusterEventPayloadTable {
  id: Generated<number>;
  payload: string;
  created_at: string;
}
