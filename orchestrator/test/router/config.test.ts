import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/shared/config.js';
import { DEFAULT_LIMITS, loadRouterConfig, parseRouterToml } from '../../src/router/config.js';
import { ConnectionLimiter, LoginRateLimiter } from '../../src/router/limits.js';
import { clientKey, cidrContains, parseCidr } from '../../src/router/cidr.js';
import { StaticResolver } from '../../src/router/static-resolver.js';

const EXAMPLE = `
bind = "0.0.0.0:25565"
try = ["lobby", "lobby-backup"]
accept_registry_backends = false

[servers]
lobby = "10.0.0.5:25566"
lobby-backup = "[fd00::5]:25566"
survival = "instance:survival-1"
bedwars = "group:bedwars"

[forced-hosts]
"Survival.Example.com." = ["survival", "lobby"]

[status]
version_name = "MyNetwork"
asleep = "zzz"

[limits]
handshake_timeout = "3s"
wake_hold_timeout = 15000
login_ratelimit = 0

[proxy-protocol]
send_to_backends = true
trusted_cidrs = ["10.1.0.0/16", "fd00::/8"]

[metrics]
bind = "127.0.0.1:9225"
`;

function errorOf(text: string): string {
  try {
    parseRouterToml(text, 'router.toml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a ConfigError');
}

describe('router TOML configuration', () => {
  it('parses a full example with defaults filled in', () => {
    const c = parseRouterToml(EXAMPLE);
    expect(c.bind).toEqual({ host: '0.0.0.0', port: 25565 });
    expect(c.routing.servers['lobby-backup']).toEqual({ kind: 'address', host: 'fd00::5', port: 25566 });
    expect(c.routing.servers.survival).toEqual({ kind: 'instance', id: 'survival-1' });
    expect(c.routing.servers.bedwars).toEqual({ kind: 'group', id: 'bedwars' });
    expect(c.routing.forcedHosts['survival.example.com']).toEqual(['survival', 'lobby']);
    expect(c.status.versionName).toBe('MyNetwork');
    expect(c.status.motd.asleep).toBe('zzz');
    expect(c.status.motd.starting).toBe('Starting…');
    expect(c.limits).toMatchObject({
      handshakeTimeoutMs: 3000,
      wakeHoldTimeoutMs: 15000,
      loginRatelimitMs: 0,
      backendDialTimeoutMs: 2000,
      maxPacketSize: 2097151,
    });
    expect(c.proxyProtocol).toEqual({ sendToBackends: true, trustedCidrs: ['10.1.0.0/16', 'fd00::/8'] });
    expect(c.metrics).toEqual({ host: '127.0.0.1', port: 9225 });
  });

  it('reads [wake] fallback, max_players_per_ip (default off) and instance names as instance references', () => {
    const c = parseRouterToml(
      '[servers]\nlobby = "10.0.0.5:25566"\ns1 = "instance:survival-1"\n[wake]\nfallback = "lobby"\n[limits]\nmax_players_per_ip = 4',
    );
    expect(c.routing.fallback).toBe('lobby');
    expect(c.routing.servers.s1).toEqual({ kind: 'instance', id: 'survival-1' });
    expect(c.limits.maxPlayersPerIp).toBe(4);
    expect(parseRouterToml('').limits.maxPlayersPerIp).toBe(0);
    expect(parseRouterToml('').routing.fallback).toBeUndefined();
  });

  it('reloads the file of a running router, keeping the environment part, and names a bad file', async () => {
    const { reloadRouterConfig, restartOnlyChanges } = await import('../../src/router/config.js');
    let text = EXAMPLE;
    const first = loadRouterConfig(
      {
        ENDERCLOUD_ROUTER_CONFIG: '/r.toml',
        ENDERCLOUD_ORCHESTRATOR_URL: 'http://o:1',
        ENDERCLOUD_ROUTER_TOKEN: 't',
        ENDERCLOUD_ROUTER_ID: 'edge',
      },
      () => text,
    );
    text = EXAMPLE.replace('bind = "0.0.0.0:25565"', 'bind = "0.0.0.0:25577"').replace(
      '"Survival.Example.com." = ["survival", "lobby"]',
      '"Survival.Example.com." = ["lobby"]',
    );
    const next = reloadRouterConfig(first, () => text);
    expect(next).toMatchObject({ orchestratorUrl: 'http://o:1', routerToken: 't', routerId: 'edge', configPath: '/r.toml' });
    expect(next.routing.forcedHosts['survival.example.com']).toEqual(['lobby']);
    expect(restartOnlyChanges(first, next)).toEqual(['bind']);
    text = '[limits]\nwake_hold_timeout = "45s"';
    expect(() => reloadRouterConfig(first, () => text)).toThrow(/^limits\.wake_hold_timeout: must be between/);
  });

  it('uses defaults for an empty file', () => {
    const c = parseRouterToml('');
    expect(c.limits).toEqual(DEFAULT_LIMITS);
    expect(c.routing.acceptRegistryBackends).toBe(false);
    expect(c.metrics).toBeUndefined();
  });

  it.each([
    ['try = ["nope"]\n[servers]\na = "1.2.3.4:5"', /^try: "nope" is not a name in \[servers\]/],
    ['[servers]\na = "1.2.3.4"', /^servers\.a: "1\.2\.3\.4" is not host:port/],
    ['[servers]\na = "instance:../x"', /^servers\.a: .* is not a valid instance id/],
    ['[limits]\nwake_hold_timeout = "45s"', /^limits\.wake_hold_timeout: must be between/],
    ['[limits]\nhandshak_timeout = 5', /^limits\.handshak_timeout: unknown key/],
    ['[proxy-protocol]\ntrusted_cidrs = ["10.0.0.0/33"]', /^proxy-protocol\.trusted_cidrs: .*prefix/],
    ['bind = 25565', /^bind: must be a string/],
    ['[forced-hosts]\n"a.example" = ["ghost"]', /^forced-hosts\."a\.example": "ghost" is not a name/],
    ['accept_registry_backends = "yes"', /^accept_registry_backends: must be true or false/],
    ['bind = ', /^router\.toml: not valid TOML/],
    ['[servers]\na = "1.2.3.4:5"\n[wake]\nfallback = "lobby"', /^wake\.fallback: "lobby" is not a name in \[servers\]/],
    ['[wake]\nfalback = "a"', /^wake\.falback: unknown key/],
    ['[limits]\nmax_players_per_ip = -1', /^limits\.max_players_per_ip: must be an integer/],
    ['[servers]\na = "group:"', /^servers\.a: "" is not a valid group id/],
  ])('rejects a bad file with one line naming the key (%#)', (text, pattern) => {
    expect(errorOf(text)).toMatch(pattern);
  });

  it('reads only the three environment variables and names a bad one', () => {
    const files: Record<string, string> = { '/etc/router.toml': EXAMPLE };
    const read = (p: string): string => {
      const t = files[p];
      if (t === undefined) throw new Error('ENOENT');
      return t;
    };
    const c = loadRouterConfig({ ENDERCLOUD_ROUTER_CONFIG: '/etc/router.toml', ENDERCLOUD_ROUTER_TOKEN: 'secret' }, read);
    expect(c.routerToken).toBe('secret');
    expect(c.orchestratorUrl).toBeUndefined();
    expect(Object.isFrozen(c.limits)).toBe(true);
    expect(() => loadRouterConfig({}, read)).toThrow(/^ENDERCLOUD_ROUTER_CONFIG: is required/);
    expect(() => loadRouterConfig({ ENDERCLOUD_ROUTER_CONFIG: '/missing' }, read)).toThrow(/^ENDERCLOUD_ROUTER_CONFIG: cannot read/);
    expect(() => loadRouterConfig({ ENDERCLOUD_ROUTER_CONFIG: '/etc/router.toml', ENDERCLOUD_ORCHESTRATOR_URL: 'ftp://x' }, read)).toThrow(
      /^ENDERCLOUD_ORCHESTRATOR_URL:/,
    );
  });
});

describe('StaticResolver', () => {
  const routing = parseRouterToml(EXAMPLE).routing;
  const resolver = new StaticResolver(routing);
  const req = { intent: 'login' as const, protocolVersion: 765, clientAddress: '1.2.3.4' };

  it('uses the forced host list for a matching address, skipping registry entries', () => {
    expect(resolver.resolve({ ...req, serverAddress: 'survival.example.com' })).toEqual({
      kind: 'route',
      candidates: [{ name: 'lobby', host: '10.0.0.5', port: 25566 }],
    });
  });

  it('falls back to try for any other address, in order', () => {
    const d = resolver.resolve({ ...req, serverAddress: 'other.example.com' });
    expect(d.kind === 'route' && d.candidates.map((c) => c.name)).toEqual(['lobby', 'lobby-backup']);
  });

  it('answers NoBackend for status and refuses logins when nothing is routable', () => {
    const empty = new StaticResolver({ servers: {}, try: [], forcedHosts: {}, acceptRegistryBackends: false }, 'none here');
    expect(empty.resolve({ ...req, intent: 'status', serverAddress: 'x' })).toEqual({ kind: 'status', state: 'NoBackend' });
    expect(empty.resolve({ ...req, serverAddress: 'x' })).toEqual({ kind: 'refuse', reason: 'no_backend', message: 'none here' });
  });
});

describe('limits and CIDRs', () => {
  it('counts connections per key and frees slots', () => {
    const l = new ConnectionLimiter(2);
    expect([l.tryAcquire('a'), l.tryAcquire('a'), l.tryAcquire('a'), l.tryAcquire('b')]).toEqual([true, true, false, true]);
    l.release('a');
    expect(l.tryAcquire('a')).toBe(true);
  });

  it('allows one login per key per interval, on an injected clock, with bounded memory', () => {
    let now = 0;
    const l = new LoginRateLimiter(3000, () => now, 10);
    expect(l.allow('a')).toBe(true);
    now = 2999;
    expect(l.allow('a')).toBe(false);
    now = 3000;
    expect(l.allow('a')).toBe(true);
    for (let i = 0; i < 50; i++) l.allow(`k${i}`);
    expect(l.size).toBeLessThanOrEqual(11);
  });

  it('keys IPv4 by /32 and IPv6 by /64', () => {
    expect(clientKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe(clientKey('2001:db8:1:2:ffff::9'));
    expect(clientKey('2001:db8:1:2::1')).not.toBe(clientKey('2001:db8:1:3::1'));
  });

  it('matches CIDRs by family and prefix', () => {
    expect(cidrContains(parseCidr('10.1.0.0/16'), '10.1.200.3')).toBe(true);
    expect(cidrContains(parseCidr('10.1.0.0/16'), '10.2.0.1')).toBe(false);
    expect(cidrContains(parseCidr('127.0.0.1'), '::ffff:127.0.0.1')).toBe(true);
    expect(cidrContains(parseCidr('fd00::/8'), 'fd12::1')).toBe(true);
    expect(cidrContains(parseCidr('fd00::/8'), '10.0.0.1')).toBe(false);
  });
});

describe('static mode', () => {
  it('names the entries that cannot act without an orchestrator', async () => {
    const { staticModeWarnings } = await import('../../src/router/router-parts.js');
    const c = parseRouterToml('[servers]\na = "10.0.0.1:1"\ns = "instance:s1"\ng = "group:ev"\n[wake]\nfallback = "a"');
    expect(staticModeWarnings(c)).toEqual([
      'servers.s: "instance:s1" is skipped without ENDERCLOUD_ORCHESTRATOR_URL',
      'servers.g: "group:ev" is skipped without ENDERCLOUD_ORCHESTRATOR_URL',
      'wake.fallback: has no effect without ENDERCLOUD_ORCHESTRATOR_URL (nothing is woken)',
    ]);
  });
});
