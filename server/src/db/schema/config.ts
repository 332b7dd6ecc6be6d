import type { ConfigFields } from '@concierge/contract';

/** The single runtime configuration row (id 1). */
export type RuntimeConfigTable = ConfigFields & {
  id: number;
  created_at: string;
  updated_at: string;
};
