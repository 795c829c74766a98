// Cleans the server address of a handshake the way mc-router and Velocity do,
// so forced-host lookups see the hostname the player typed.

/**
 * Cuts at the first `\0` (Forge FML/FML2/FML3 markers, BungeeCord forwarding),
 * cuts TCPShield's `///ip:port///ts///sig` suffix, strips trailing dots and
 * lowercases.
 */
export function cleanServerAddress(raw: string): string {
  let host = raw;
  const nul = host.indexOf('\0');
  if (nul >= 0) host = host.slice(0, nul);
  const shield = host.indexOf('///');
  if (shield >= 0) host = host.slice(0, shield);
  host = host.replace(/\.+$/, '');
  return host.toLowerCase();
}
