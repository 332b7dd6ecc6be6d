import type { AdminSessionTable, AdminUserTable, AppSettingTable, LoginThrottleTable } from './admin.ts';
import type { RuntimeConfigTable } from './config.ts';

/** Every table of the database, by name. Later domains add theirs here. */
export interface DB {
  admin_users: AdminUserTable;
  admin_sessions: AdminSessionTable;
  login_throttle: LoginThrottleTable;
  app_settings: AppSettingTable;
  runtime_config: RuntimeConfigTable;
}

export type { AdminSessionTable, AdminUserTable, AppSettingTable, LoginThrottleTable, RuntimeConfigTable };
