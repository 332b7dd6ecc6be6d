// `npm run dev`: the server restarting on change (port 8080) and Vite's dev
// server with hot reload (port 5173, proxying the API to 8080).
import path from 'node:path';
import { ROOT, run } from './lib.mjs';

console.log('Open http://127.0.0.1:5173/ui/ (Vite, hot reload); the API runs on http://127.0.0.1:8080');
const server = run(process.execPath, ['--watch', '--watch-preserve-output', 'server/src/main.ts']);
const web = run(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), '--host', '127.0.0.1'], { cwd: path.join(ROOT, 'web') });
const code = await Promise.race([server, web]);
process.exit(code);
