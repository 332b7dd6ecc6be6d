import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../test-support/fixture-server.ts';
import { fetchSource, FetchError, isInternalAddress, MAX_REDIRECTS, type FetchOptions } from './fetch-source.ts';

const FEED = 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n';

describe('isInternalAddress', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', '[::1]', '::ffff:127.0.0.1', '::ffff:192.168.0.1', 'fe80::1%eth0',
  ])('%s is internal', (address) => expect(isInternalAddress(address)).toBe(true));

  it.each(['8.8.8.8', '172.32.0.1', '192.169.0.1', '203.0.113.10', '2001:db8::1', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) =>
    expect(isInternalAddress(address)).toBe(false),
  );
});

/**
 * Two real local servers: `origin` plays the public schedule host (reached
 * under public names that the test's resolver maps to public addresses and
 * its fetch sends to 127.0.0.1), `inside` plays a service on the server's
 * own network that must never be reached through a redirect.
 */
describe('redirects from the schedule source', () => {
  let origin: FixtureServer;
  let inside: FixtureServer;
  beforeEach(async () => {
    origin = await startFixtureServer();
    inside = await startFixtureServer();
    inside.route('/secret', { body: FEED, contentType: 'text/calendar' });
  });
  afterEach(async () => {
    await origin.close();
    await inside.close();
  });

  const port = (server: FixtureServer) => new URL(server.url).port;
  const NAMES: Record<string, string[]> = {
    'schedule.example': ['203.0.113.10'],
    'mirror.example': ['198.51.100.7'],
    'intranet.example': ['192.168.1.10'],
    'dual.example': ['203.0.113.11', 'fd00::5'],
  };
  const options = (): FetchOptions => ({
    timeoutMs: 5_000,
    maxBytes: 1_000_000,
    resolve: async (hostname) => NAMES[hostname] ?? (hostname === 'localhost' ? ['127.0.0.1', '::1'] : []),
    // The public names are this test's origin server. Nothing else but loopback is ever connected to: were the
    // check to regress, a redirect to 10.0.0.1 or 169.254.169.254 fails here instead of leaving the machine.
    fetch: (input, init) => {
      const url = new URL(String(input).replace(/\/\/(schedule|mirror)\.example:/, '//127.0.0.1:'));
      if (!/^(127\.\d+\.\d+\.\d+|localhost|\[::1\]|\[::ffff:7f00:1\])$/.test(url.hostname)) throw new TypeError(`test fetch: ${url.hostname} is not on this machine`);
      return fetch(url, init);
    },
  });
  const publicSource = () => `http://schedule.example:${port(origin)}/feed.ics`;

  it.each([
    ['a loopback address', () => `http://127.0.0.1:${port(inside)}/secret`],
    ['another loopback address', () => `http://127.1.2.3:${port(inside)}/secret`],
    ['IPv6 loopback', () => `http://[::1]:${port(inside)}/secret`],
    ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port(inside)}/secret`],
    ['a name that resolves to loopback (localhost)', () => `http://localhost:${port(inside)}/secret`],
    ['a name that resolves to a private address', () => 'http://intranet.example/admin'],
    ['a name with a public and a unique-local address', () => 'http://dual.example/feed'],
    ['the cloud metadata address (link-local)', () => 'http://169.254.169.254/latest/meta-data/'],
    ['a private address', () => 'http://10.0.0.1/feed'],
    ['an IPv6 unique-local address', () => 'http://[fd00::1]/feed'],
    ['an IPv6 link-local address', () => 'http://[fe80::1]/feed'],
  ])('refuses a redirect from a public source into %s, and never reaches it', async (_name, target) => {
    origin.route('/feed.ics', { location: target() });
    const error = await fetchSource(publicSource(), options()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(/^Refused the redirect from http:\/\/schedule\.example:\d+\/feed\.ics to .+: it leads into a private or local network \(.+\), and the configured source is public$/);
    expect(inside.requests).toEqual([]);
  });

  it('refuses a hop into the local network after a first public hop', async () => {
    origin.route('/feed.ics', { status: 301, location: `http://mirror.example:${port(origin)}/moved.ics` });
    origin.route('/moved.ics', { status: 307, location: `http://127.0.0.1:${port(inside)}/secret` });
    await expect(fetchSource(publicSource(), options())).rejects.toThrow(/Refused the redirect from http:\/\/mirror\.example:\d+\/moved\.ics/);
    expect(inside.requests).toEqual([]);
  });

  it('follows redirects between public hosts', async () => {
    origin.route('/feed.ics', { status: 301, location: `http://mirror.example:${port(origin)}/moved.ics` });
    origin.route('/moved.ics', { status: 308, location: '/final.ics' });
    origin.route('/final.ics', { body: FEED, contentType: 'text/calendar' });
    const result = await fetchSource(publicSource(), options());
    expect(result).toMatchObject({ kind: 'content', contentType: 'text/calendar' });
    expect(origin.requests.map((request) => request.path)).toEqual(['/feed.ics', '/moved.ics', '/final.ics']);
  });

  it('lets a source configured on a local address redirect within the local network', async () => {
    origin.route('/feed.ics', { location: `http://localhost:${port(inside)}/secret` });
    const result = await fetchSource(`${origin.url}/feed.ics`, options());
    expect(result).toMatchObject({ kind: 'content' });
    expect(inside.requests.map((request) => request.path)).toEqual(['/secret']);
  });

  it(`gives up after ${MAX_REDIRECTS} redirects, and refuses redirects to other schemes`, async () => {
    origin.route('/feed.ics', { location: '/feed.ics' });
    await expect(fetchSource(publicSource(), options())).rejects.toThrow(`Too many redirects from ${publicSource()} (more than ${MAX_REDIRECTS})`);
    expect(origin.requests).toHaveLength(MAX_REDIRECTS + 1);
    origin.route('/feed.ics', { location: 'file:///etc/passwd' });
    await expect(fetchSource(publicSource(), options())).rejects.toThrow(/redirects to file: \(only http and https are followed\)/);
  });
});
