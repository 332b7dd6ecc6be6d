// `npm start`: build the web app if needed, then run the server (which
// creates and migrates its database on start). Settings come from the
// environment; see the README.
import { requireSupportedNode } from './node-version.mjs';

requireSupportedNode();
const { buildWebIfStale } = await import('./lib.mjs');

if (!(await buildWebIfStale())) {
  console.error('The web app failed to build; see the errors above.');
  process.exit(1);
}
await import('../server/src/main.ts');
