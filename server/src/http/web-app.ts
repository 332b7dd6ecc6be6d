import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.ts';

/** Values the single-page app reads at run time (DESIGN §7), injected into index.html. */
export interface WebAppValues {
  productName: string;
  turnstileSiteKey: string | null;
  communityUrl: string | null;
  conventionUrl: string | null;
  version: string;
  /** The convention's IANA zone, for every time shown to attendees (DESIGN §9 "Times shown to people"). */
  timeZone: string;
  /** The operator's public chat wording (DESIGN §9), `{product}` already filled in. */
  chat: {
    welcomeMessage: string;
    /** The welcome as safe HTML (raw HTML escaped), so the chat shows it before its markdown renderer loads. */
    welcomeHtml: string;
    examplePrompts: string[];
    aboutText: string;
  };
}

const PLACEHOLDER = '<!--app-config-->';
const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** index.html with the run-time values as a JSON script block (not executed, so the CSP stays strict). */
export function renderIndexHtml(template: string, values: WebAppValues): string {
  const json = JSON.stringify(values).replace(/</g, '\\u003c');
  return template
    .replace(PLACEHOLDER, `<script type="application/json" id="app-config">${json}</script>`)
    .replace(/<title>[^<]*<\/title>/, `<title>${escapeHtml(values.productName)}</title>`);
}

/** Paths that name a file (the last segment has an extension) are never answered with index.html. */
const looksLikeFile = (url: string) => /\/[^/]*\.[a-z0-9]+$/i.test(url.split('?')[0]!);

/**
 * Serves the built app under /ui: hashed assets with a long cache life,
 * index.html (never cached) for every other /ui path so a reload on a deep
 * link works, and / redirects to /ui/. The run-time values are read on every
 * page load, so wording edited on the Config screen shows on the next visit.
 */
export async function registerWebApp(app: FastifyInstance, options: { distDir: string; values: () => WebAppValues }): Promise<void> {
  const indexFile = path.join(options.distDir, 'index.html');
  const template = existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : undefined;
  if (!template) app.log.warn({ distDir: options.distDir }, 'the web app is not built; run `npm run build`');
  let rendered: { key: string; html: string } | undefined;
  const indexHtml = (template: string) => {
    const values = options.values();
    const key = JSON.stringify(values);
    if (rendered?.key !== key) rendered = { key, html: renderIndexHtml(template, values) };
    return rendered.html;
  };

  const serveIndex = (_request: FastifyRequest, reply: FastifyReply) => {
    if (!template) {
      return reply.status(503).type('text/plain').send('The web app has not been built yet. Run `npm run build` (or `npm start`, which builds it).');
    }
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(indexHtml(template));
  };

  if (template) {
    await app.register(fastifyStatic, {
      root: options.distDir,
      prefix: '/ui/',
      index: false,
      wildcard: true,
      setHeaders: (reply, filePath) => {
        const immutable = filePath.includes(`${path.sep}assets${path.sep}`);
        reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    });
  }

  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/ui/'));
  app.get('/ui', { schema: { hide: true } }, serveIndex);
  app.get('/ui/', { schema: { hide: true } }, serveIndex);

  app.setNotFoundHandler((request, reply) => {
    const isPage = (request.method === 'GET' || request.method === 'HEAD') && request.url.startsWith('/ui/') && !looksLikeFile(request.url);
    if (isPage) return serveIndex(request, reply);
    return sendError(request, reply, 404, { error: `Not found: ${request.method} ${request.url.split('?')[0]}`, code: 'not_found' });
  });
}
