// `ectl hosts join-token create|list|revoke` and `ectl hosts revoke-credential`:
// enrolling agents with one-time join tokens and revoking a host's own
// credential (docs/agent.md "Enrolment"). A join token's secret is printed
// once, at creation, on stdout only.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { jsonCommand, listCommand } from '../command-shapes.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import type { HostView, JoinTokenView } from '../../contracts/public-api/views.js';

export function registerHostCredentials(hosts: Command, ctx: CommandContext): void {
  const joinTokens = hosts.command('join-token').description('one-time join tokens for enrolling agents (admin token)');
  joinTokens
    .command('create')
    .description('create a join token; its secret is printed once (give it to the agent as AGENT_JOIN_TOKEN)')
    .option('--agent-id <id>', 'the only agent id it may enrol (required to re-enrol a known host safely)')
    .option('--ttl <duration>', 'how long it stays usable, e.g. 30m, 1h (default), 7d (at most) or seconds')
    .option('--json', 'print JSON (includes the secret)')
    .action(async (opts: { agentId?: string; ttl?: string; json?: boolean }) => {
      const ttl = opts.ttl === undefined ? undefined : /^\d+$/.test(opts.ttl) ? Number(opts.ttl) : opts.ttl;
      const t = await (
        await ctx.client()
      ).post<JoinTokenView & { secret: string }>('/hosts/join-tokens', {
        ...(opts.agentId !== undefined ? { agentId: opts.agentId } : {}),
        ...(ttl !== undefined ? { ttl } : {}),
      });
      if (opts.json) return printJson(ctx.out, t);
      ctx.out.error(
        `join token ${t.id} created${t.agentId ? ` for agent ${t.agentId}` : ' (any agent id)'}, usable once until ${t.expiresAt}; its secret is shown only now:`,
      );
      ctx.out.line(t.secret);
    });
  listCommand<JoinTokenView>(joinTokens, ctx, {
    use: 'list',
    description: 'list join tokens (never their secrets) with their state: active, used, expired or revoked',
    path: '/hosts/join-tokens',
    key: 'joinTokens',
    columns: [
      ...keyColumns<JoinTokenView>('id', 'state'),
      { header: 'agent', value: (t) => t.agentId ?? '(any)' },
      { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
      { header: 'expires', value: (t) => t.expiresAt },
      { header: 'used by', value: (t) => t.usedBy ?? '-' },
    ],
    empty: 'no join tokens',
  }).alias('ls');
  jsonCommand<JoinTokenView>(joinTokens, ctx, {
    use: 'revoke <id>',
    description: 'revoke an unused join token (by id, see ectl hosts join-token list)',
    fetch: async (_opts, id) => (await ctx.client()).delete<JoinTokenView>(`/hosts/join-tokens/${enc(id)}`),
    render: (t) => ctx.out.line(`join token ${t.id} revoked`),
  });
  jsonCommand<HostView>(hosts, ctx, {
    use: 'revoke-credential <id>',
    description: "revoke a host's own credential at once (its heartbeats are refused; re-enrol it with a new join token)",
    fetch: async (_opts, id) => (await ctx.client()).post<HostView>(`/hosts/${enc(id)}/revoke-credential`, {}),
    render: (h) =>
      ctx.out.line(
        `host ${h.id}: credential revoked (it goes OFFLINE after its missed heartbeats; ectl hosts join-token create --agent-id ${h.id} to re-enrol)`,
      ),
  });
}
