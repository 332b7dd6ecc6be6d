import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProduct, type Product } from './support.ts';

/** The built app as a browser fetches it: the chat page and the scripts and styles it loads. */
describe('the built chat page over HTTP', () => {
  let product: Product;

  beforeAll(async () => {
    product = await startProduct();
  });
  afterAll(() => product?.close());

  async function chatAssets(): Promise<string[]> {
    const page = await fetch(`${product.url}/ui/chat`, { headers: { 'accept-encoding': 'br' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache, private');
    expect(page.headers.get('content-encoding')).toBe('br');
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1]!);
    expect(assets.length).toBeGreaterThan(0);
    return assets;
  }

  it('sends the chat\'s scripts and styles precompressed with Brotli, cached for a year', async () => {
    for (const asset of await chatAssets()) {
      const plain = await fetch(`${product.url}${asset}`, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.headers.get('content-encoding'), asset).toBeNull();
      const original = await plain.text();
      if (original.length < 1024) continue;
      const brotli = await fetch(`${product.url}${asset}`, { headers: { 'accept-encoding': 'br' } });
      expect(brotli.headers.get('content-encoding'), asset).toBe('br');
      expect(brotli.headers.get('cache-control'), asset).toBe('public, max-age=31536000, immutable');
      // The bytes on the wire are the build's .br file: no compression per request.
      expect(Number(brotli.headers.get('content-length')), asset).toBeLessThan(original.length / 2);
      expect(await brotli.text(), asset).toBe(original);
      const gzip = await fetch(`${product.url}${asset}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(gzip.headers.get('content-encoding'), asset).toBe('gzip');
      expect(await gzip.text(), asset).toBe(original);
    }
  });

  it('redirects / and /chat to the chat page', async () => {
    for (const path of ['/', '/chat']) {
      const reply = await fetch(`${product.url}${path}`, { redirect: 'manual' });
      expect(reply.status, path).toBe(302);
      expect(reply.headers.get('location'), path).toBe('/ui/chat');
    }
  });
});
