export * from './auth.ts';
export * from './chat.ts';
export * from './config.ts';
export * from './duration.ts';
export * from './errors.ts';
export * from './health.ts';
export * from './lists.ts';
