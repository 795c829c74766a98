// The router's public address (ENDERCLOUD_ROUTER_PUBLIC_ADDRESS): where a
// backend's RCON `transfer <host> <port> <player>` sends players. Pure parsing.

export interface RouterPublicAddress {
  host: string;
  port: number;
}

// A hostname or an IPv4/IPv6 literal: it goes into a console command, so no spaces or quotes.
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/;

/** `host:port` or `[v6]:port` (port 1-65535); throws naming the problem. */
export function parseRouterPublicAddress(value: string): RouterPublicAddress {
  const m = /^(.+):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !HOST.test(m[1]!) || port < 1 || port > 65535) {
    throw new Error(`"${value}" is not host:port (e.g. play.example.com:25565)`);
  }
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return { host, port };
}
