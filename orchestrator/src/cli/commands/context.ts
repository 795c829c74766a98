// `ectl login` and `ectl context set|use|ls`: named API targets in the config file.

import type { Command } from 'commander';
import { ApiClient } from '../api-client.js';
import { CONTEXT_NAME_PATTERN, normaliseUrl, readConfigFile, writeConfigFile } from '../config.js';
import { ApiError, CliError } from '../errors.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';

function contextName(name: string): string {
  if (!CONTEXT_NAME_PATTERN.test(name))
    throw new CliError('usage', `context name "${name}" is invalid: use letters, digits, '_', '.', '-'`);
  return name;
}

export function registerContext(program: Command, ctx: CommandContext): void {
  program
    .command('login')
    .description('store an orchestrator URL and token in a context and make it current')
    .requiredOption('--url <url>', 'orchestrator base URL, e.g. http://127.0.0.1:8080')
    .requiredOption('--token <token>', 'API token (the admin token is in <data>/admin-token)')
    .option('--name <context>', 'context to write (default: the current one, else "default")')
    .option('--no-verify', 'store without checking the token against the API')
    .action(async (opts: { url: string; token: string; name?: string; verify: boolean }) => {
      const url = normaliseUrl(opts.url);
      const config = await readConfigFile(ctx.env.configPath);
      const name = contextName(opts.name ?? config.currentContext ?? 'default');
      if (opts.verify) {
        try {
          await new ApiClient({ url, token: opts.token, fetch: ctx.fetch }).get('/hosts');
        } catch (err) {
          // 403 means the token is valid but lacks the read scope: still a login.
          if (!(err instanceof ApiError && err.status === 403)) throw err;
        }
      }
      config.contexts[name] = { url, token: opts.token };
      config.currentContext = name;
      await writeConfigFile(ctx.env.configPath, config);
      ctx.out.line(`logged in to ${url} (context "${name}", saved in ${ctx.env.configPath})`);
    });

  const context = program.command('context').description('manage named orchestrator contexts');
  context
    .command('set <name>')
    .description('create or change a context')
    .option('--url <url>', 'orchestrator base URL')
    .option('--token <token>', 'API token')
    .action(async (nameArg: string, opts: { url?: string; token?: string }) => {
      const name = contextName(nameArg);
      const config = await readConfigFile(ctx.env.configPath);
      const existing = config.contexts[name];
      const url = opts.url ? normaliseUrl(opts.url) : existing?.url;
      if (!url) throw new CliError('usage', `context "${name}" is new: --url is required`);
      const token = opts.token ?? existing?.token;
      config.contexts[name] = token === undefined ? { url } : { url, token };
      config.currentContext ??= name;
      await writeConfigFile(ctx.env.configPath, config);
      ctx.out.line(`context "${name}" set (${url})`);
    });
  context
    .command('use <name>')
    .description('make a context the current one')
    .action(async (name: string) => {
      const config = await readConfigFile(ctx.env.configPath);
      if (!config.contexts[name]) throw new CliError('usage', `no context named "${name}" (see ectl context ls)`);
      config.currentContext = name;
      await writeConfigFile(ctx.env.configPath, config);
      ctx.out.line(`current context is now "${name}"`);
    });
  context
    .command('ls')
    .description('list contexts (tokens are never shown)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const config = await readConfigFile(ctx.env.configPath);
      const rows = Object.entries(config.contexts).map(([name, c]) => ({
        name,
        current: name === config.currentContext,
        url: c.url,
        token: c.token ? 'set' : 'none',
      }));
      if (opts.json) return printJson(ctx.out, rows);
      printTable(
        ctx.out,
        rows,
        [
          { header: '', value: (r) => (r.current ? '*' : ' ') },
          { header: 'name', value: (r) => r.name },
          { header: 'url', value: (r) => r.url },
          { header: 'token', value: (r) => r.token },
        ],
        'no contexts yet: run ectl login --url URL --token TOKEN',
      );
    });
}
