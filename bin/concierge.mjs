#!/usr/bin/env node
// The direct entry a supervisor runs (systemd, Docker, runit…): the server in
// this very process, with no npm in between, so the supervisor's SIGTERM
// reaches the server, which finishes the answers in flight and exits 0, and
// the exit code the supervisor sees is the server's own.
//
//   /opt/concierge/node_modules/.bin/node /opt/concierge/bin/concierge.mjs
//
// Settings come from the environment (README "Configuration"). It does not
// build the web app: run `npm run build` when deploying (`npm start` builds
// it when stale; a supervised service usually cannot write to its own tree).
import { requireSupportedNode } from '../scripts/node-version.mjs';

requireSupportedNode();
await import('../server/src/main.ts');
