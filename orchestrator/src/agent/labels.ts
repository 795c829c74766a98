// Docker ownership rules (docs/agent.md "What a managed container looks like"): container names and the labels
// that tell which agent manages a container. Pure; no I/O.

export const LABEL = {
  managed: 'orchestrator.managed',
  host: 'orchestrator.host',
  instance: 'orchestrator.instance',
  group: 'orchestrator.group',
  variant: 'orchestrator.variant',
  session: 'orchestrator.session',
  hostPort: 'orchestrator.host-port',
  /** The user asked for at create ('' = the image default); it never changes. */
  user: 'orchestrator.user',
  /** Hash of the container-defining request, to tell a finished replace from a pending one. */
  config: 'orchestrator.config',
  /** Comma-separated keys of the caller's own labels (image labels are not theirs). */
  labelKeys: 'orchestrator.label-keys',
} as const;

/** Prefix reserved for the agent's own labels; callers cannot set it. */
export const RESERVED_LABEL_PREFIX = 'orchestrator.';

export interface OwnershipLabels {
  agentId: string;
  instanceId: string;
  groupId: string;
  variantId: string;
  sessionId?: string | undefined;
  hostPort: number;
}

export function containerName(variantId: string, instanceId: string): string {
  return `endercloud-${variantId}-${instanceId}`;
}

export function ownershipLabels(o: OwnershipLabels): Record<string, string> {
  return {
    [LABEL.managed]: 'true',
    [LABEL.host]: o.agentId,
    [LABEL.instance]: o.instanceId,
    [LABEL.group]: o.groupId,
    [LABEL.variant]: o.variantId,
    [LABEL.session]: o.sessionId ?? '',
    [LABEL.hostPort]: String(o.hostPort),
  };
}

/** Label filter selecting every container this agent manages. */
export function hostSelector(agentId: string): Record<string, string> {
  return { [LABEL.managed]: 'true', [LABEL.host]: agentId };
}

/** True only when the labels say this agent manages the container (for that instance, when given). */
export function isManagedBy(labels: Readonly<Record<string, string>>, agentId: string, instanceId?: string): boolean {
  if (labels[LABEL.managed] !== 'true' || labels[LABEL.host] !== agentId) return false;
  return instanceId === undefined || labels[LABEL.instance] === instanceId;
}

export function labelledHostPort(labels: Readonly<Record<string, string>>): number | undefined {
  const raw = labels[LABEL.hostPort];
  if (raw === undefined || !/^\d{1,5}$/.test(raw)) return undefined;
  const port = Number(raw);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** Variant env first, then the agent's own variables, which always win. */
export function containerEnv(variantEnv: Readonly<Record<string, string>>, injected: Readonly<Record<string, string>>): [string, string][] {
  const own = new Set(Object.keys(injected));
  const env: [string, string][] = Object.entries(variantEnv).filter(([k]) => !own.has(k));
  for (const [k, v] of Object.entries(injected)) env.push([k, v]);
  return env;
}
