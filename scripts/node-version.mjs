// The Node.js check every entry point runs first. Written in plain
// JavaScript that any Node since 12 parses, so an older Node (the machine's
// own, often 20) stops with this message instead of "Unknown file extension
// .ts" from deep inside the server.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REQUIRED_NODE_MAJOR = 24;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What is wrong with running on `version` (e.g. "20.20.2"), or null when it will do. */
export function nodeVersionProblem(version, execPath) {
  const major = Number(String(version).replace(/^v/, '').split('.')[0]);
  if (major >= REQUIRED_NODE_MAJOR) return null;
  return [
    `Con Concierge needs Node.js ${REQUIRED_NODE_MAJOR} or newer; this is Node.js ${version} (${execPath}).`,
    `Node.js ${REQUIRED_NODE_MAJOR} comes with the project (the "node" package, installed by npm install): start it with \`npm start\`,`,
    `or, under a supervisor, run ${path.join(ROOT, 'node_modules/.bin/node')} ${path.join(ROOT, 'bin/concierge.mjs')} (see deploy/concierge.service).`,
  ].join('\n');
}

/** Exits with the message above when this process runs on an older Node. */
export function requireSupportedNode() {
  const problem = nodeVersionProblem(process.versions.node, process.execPath);
  if (problem === null) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
