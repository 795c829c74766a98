// Is the URL ectl talks to an EnderCloud orchestrator? Asked only when an answer
// looks wrong (HTML, not JSON, an unknown route, 401), by reading
// GET /api/v1/health: the orchestrator answers it publicly with {status, version,
// database}; an agent answers {status, agentId, ...} or 401 (AGENT_TOKEN).

export type TargetKind = { kind: 'orchestrator' } | { kind: 'agent'; agentId: string | null } | { kind: 'other'; what: string };

/** Pure: classifies the answer to GET /api/v1/health. */
export function classifyHealth(status: number, contentType: string | null, text: string): TargetKind {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const obj = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (status === 200 && obj && typeof obj.status === 'string') {
    if ('agentId' in obj) return { kind: 'agent', agentId: typeof obj.agentId === 'string' ? obj.agentId : null };
    return { kind: 'orchestrator' };
  }
  // The orchestrator's health is public; the agent's sits behind its bearer token.
  const error = obj?.error as { code?: unknown } | undefined;
  if (status === 401 && error?.code === 'UNAUTHORIZED') return { kind: 'agent', agentId: null };
  const type = (contentType ?? '').split(';')[0]!.trim() || 'no content type';
  const html = /html/i.test(type) || /^\s*<(!doctype|html)/i.test(text);
  return { kind: 'other', what: `GET /api/v1/health answered HTTP ${status} with ${html ? 'an HTML page' : type}` };
}

/** The one line ectl prints when the target is not an orchestrator (undefined when it is). */
export function notOrchestratorMessage(url: string, target: TargetKind): string | undefined {
  if (target.kind === 'orchestrator') return undefined;
  if (target.kind === 'agent') {
    return `${url} is an EnderCloud agent${target.agentId ? ` (host ${target.agentId})` : ''}, not the orchestrator: point ectl at the orchestrator's URL (ectl login --url URL, or ENDERCLOUD_URL)`;
  }
  return `${url} is not an EnderCloud orchestrator (${target.what}): check the URL (ectl context ls, or ENDERCLOUD_URL)`;
}
