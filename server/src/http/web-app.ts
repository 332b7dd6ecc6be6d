import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { embedScript } from './embed.ts';
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
  /** The admin signed in on this browser, if any: the chat's nav needs no /api/logged_in request. */
  admin?: { username: string } | null;
}

export interface WebAppOptions {
  distDir: string;
  values: () => WebAppValues;
  /** The admin signed in on the request's browser, or null. */
  admin: (request: FastifyRequest, reply: FastifyReply) => Promise<{ username: string } | null>;
  /** Sites allowed to frame the chat (EMBED_ORIGINS); empty: only this site. */
  embedOrigins: readonly string[];
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

/** The chat's own pages (SPEC §2 chat-home routes under /ui): the ones another site may frame (EMBED_ORIGINS). */
const isChatPage = (url: string) => /^\/ui(\/|\/chat(\/.*)?)?$/.test(url.split('?')[0]!);

/** Built files with a content hash in their name (Vite's assets/): cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';


/**
 * Serves the built app under /ui: hashed assets with a long cache life, sent
 * precompressed (the build's .br / .gz beside each file) when the browser
 * takes them; index.html (never cached) for every other /ui path so a reload
 * on a deep link works, with the run-time values and whether an admin is
 * signed in; / and /chat redirect to the chat. The run-time values are read
 * on every page load, so wording edited on the Config screen shows on the
 * next visit. With EMBED_ORIGINS, the chat's pages (only they) may be framed
 * by those sites.
 */
export async function registerWebApp(app: FastifyInstance, options: WebAppOptions): Promise<void> {
  const indexFile = path.join(options.distDir, 'index.html');
  const template = existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : undefined;
  if (!template) app.log.warn({ distDir: options.distDir }, 'the web app is not built; run `npm run build`');
  let rendered: { key: string; html: string } | undefined;
  const indexHtml = (template: string, admin: { username: string } | null) => {
    const values = { ...options.values(), admin };
    const key = JSON.stringify(values);
    if (rendered?.key !== key) rendered = { key, html: renderIndexHtml(template, values) };
    return rendered.html;
  };

  const serveIndex = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!template) {
      return reply.status(503).type('text/plain').send('The web app has not been built yet. Run `npm run build` (or `npm start`, which builds it).');
    }
    if (options.embedOrigins.length > 0 && isChatPage(request.url)) allowFraming(reply, options.embedOrigins);
    const html = indexHtml(template, await options.admin(request, reply));
    // It names the signed-in admin: never kept by a shared cache.
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache, private').send(html);
  };

  if (template) {
    await app.register(fastifyStatic, {
      root: options.distDir,
      prefix: '/ui/',
      index: false,
      wildcard: true,
      preCompressed: true,
      setHeaders: (reply, filePath) => {
        const immutable = filePath.includes(`${path.sep}assets${path.sep}`);
        reply.header('cache-control', immutable ? IMMUTABLE : 'no-cache');
      },
    });
  }

  // The embed snippet's script runs on other sites: it may be loaded from anywhere (CORP), and is revalidated hourly.
  let embed: { name: string; script: string } | undefined;
  app.get('/ui/embed.js', { schema: { hide: true } }, (_request, reply) => {
    const name = options.values().productName;
    if (embed?.name !== name) embed = { name, script: embedScript(name) };
    reply.raw.setHeader('cross-origin-resource-policy', 'cross-origin');
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(embed.script);
  });

  const toChat = (_request: FastifyRequest, reply: FastifyReply) => reply.redirect('/ui/chat');
  app.get('/', { schema: { hide: true } }, toChat);
  app.get('/chat', { schema: { hide: true } }, toChat);
  app.get('/ui', { schema: { hide: true } }, serveIndex);
  app.get('/ui/', { schema: { hide: true } }, serveIndex);

  app.setNotFoundHandler((request, reply) => {
    const isPage = (request.method === 'GET' || request.method === 'HEAD') && request.url.startsWith('/ui/') && !looksLikeFile(request.url);
    if (isPage) return serveIndex(request, reply);
    return sendError(request, reply, 404, { error: `Not found: ${request.method} ${request.url.split('?')[0]}`, code: 'not_found' });
  });
}

/**
 * Lets the listed sites frame this page: their origins join CSP
 * frame-ancestors, and X-Frame-Options (which knows only SAMEORIGIN) goes.
 * The security headers were set on the raw response before the route ran.
 */
function allowFraming(reply: FastifyReply, origins: readonly string[]): void {
  const raw = reply.raw;
  const csp = raw.getHeader('content-security-policy');
  if (typeof csp === 'string') {
    const ancestors = `frame-ancestors 'self' ${origins.join(' ')}`;
    raw.setHeader('content-security-policy', /frame-ancestors [^;]*/.test(csp) ? csp.replace(/frame-ancestors [^;]*/, ancestors) : `${csp};${ancestors}`);
  }
  raw.removeHeader('x-frame-options');
}
