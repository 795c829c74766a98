// The Linux capability names a template may add back to its game container
// (which starts with every capability dropped), shared by the catalog rules
// and the agent so both refuse the same names the same way.

/** Every capability the kernel defines, without the `CAP_` prefix (Docker's spelling). */
export const LINUX_CAPABILITIES = [
  'AUDIT_CONTROL',
  'AUDIT_READ',
  'AUDIT_WRITE',
  'BLOCK_SUSPEND',
  'BPF',
  'CHECKPOINT_RESTORE',
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'IPC_LOCK',
  'IPC_OWNER',
  'KILL',
  'LEASE',
  'LINUX_IMMUTABLE',
  'MAC_ADMIN',
  'MAC_OVERRIDE',
  'MKNOD',
  'NET_ADMIN',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_RAW',
  'PERFMON',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_CHROOT',
  'SYS_MODULE',
  'SYS_NICE',
  'SYS_PACCT',
  'SYS_PTRACE',
  'SYS_RAWIO',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'SYSLOG',
  'WAKE_ALARM',
] as const;

const KNOWN = new Set<string>(LINUX_CAPABILITIES);
export const MAX_CAP_ADD = LINUX_CAPABILITIES.length;

/**
 * The problem with a `capAdd` list, or undefined when every entry is a known
 * capability named once. `ALL` is refused: it would undo the drop.
 */
export function capAddProblem(list: readonly unknown[]): string | undefined {
  const seen = new Set<string>();
  for (const [i, name] of list.entries()) {
    if (typeof name !== 'string') return `entry ${i} must be a capability name`;
    if (name.toUpperCase() === 'ALL' || name.toUpperCase() === 'CAP_ALL')
      return 'may not be ALL: game containers start with every capability dropped and add back only the ones named';
    if (!KNOWN.has(name)) {
      const hint = KNOWN.has(name.toUpperCase().replace(/^CAP_/, '')) ? ` (write ${name.toUpperCase().replace(/^CAP_/, '')})` : '';
      return `names ${JSON.stringify(name)}, which is not a Linux capability${hint}`;
    }
    if (seen.has(name)) return `names ${name} twice`;
    seen.add(name);
  }
  return undefined;
}
