import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const API = 'http://127.0.0.1:8080';

/** The app is served under /ui by the server; in development Vite proxies the API to it. */
export default defineConfig({
  base: '/ui/',
  plugins: [react()],
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
