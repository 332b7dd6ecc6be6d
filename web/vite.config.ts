/// <reference types="node" />
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliCompress, constants as zlib, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const API = 'http://127.0.0.1:8080';

/** The app is served under /ui by the server; in development Vite proxies the API to it. */
export default defineConfig({
  base: '/ui/',
  plugins: [react(), precompress()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 900 },
  server: {
    port: 5173,
    proxy: {
      '/api': API,
      '/setup': API,
      '/login': API,
      '/logout': API,
      '/public': API,
      '/healthz': API,
      '/ws': { target: API, ws: true },
    },
  },
});

/**
 * Writes `<file>.br` (Brotli, best) and `<file>.gz` (gzip, best) next to
 * every built file worth compressing (text over 1 KB), so the server sends
 * them as they are instead of compressing each request (DESIGN §9
 * "Compression and caching"). index.html is left out: the server fills in
 * its run-time values and compresses it as it goes.
 */
function precompress(): Plugin {
  const COMPRESSIBLE = /\.(js|mjs|css|svg|json|txt|webmanifest|woff|ttf|xml|wasm)$/i;
  const MIN_BYTES = 1024;
  const brotli = promisify(brotliCompress);
  const gzipBest = promisify(gzip);
  let outDir = '';
  async function* files(dir: string): AsyncGenerator<string> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) yield* files(full);
      else yield full;
    }
  }
  return {
    name: 'concierge-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      const work: Promise<unknown>[] = [];
      for await (const file of files(outDir)) {
        if (!COMPRESSIBLE.test(file) || (await stat(file)).size < MIN_BYTES) continue;
        work.push(
          readFile(file).then((data) =>
            Promise.all([
              brotli(data, { params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY, [zlib.BROTLI_PARAM_SIZE_HINT]: data.length } }).then((out) => writeFile(`${file}.br`, out)),
              gzipBest(data, { level: zlib.Z_BEST_COMPRESSION }).then((out) => writeFile(`${file}.gz`, out)),
            ]),
          ),
        );
      }
      await Promise.all(work);
    },
  };
}
