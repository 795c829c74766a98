// ectl's pure decisions, as tables: when --wait is over, what a health answer
// says about the target, KEY=VALUE typing, typed-name checks, INIT_CWD under
// npm run, hint rewriting, and the completion table.

import { describe, expect, it } from 'vitest';
import { rewriteHints } from '../../src/cli/api-hints.js';
import { argumentKind, completionScript, completionTable, optionKind, type CommandNode } from '../../src/cli/completion.js';
import { callerDirectory } from '../../src/cli/config.js';
import { checkConfirmFlag } from '../../src/cli/confirm.js';
import type { CliError } from '../../src/cli/errors.js';
import { parseAssignment } from '../../src/cli/commands/instance-info.js';
import { classifyHealth, notOrchestratorMessage } from '../../src/cli/target-check.js';
import { GOAL_OF_ACTION, waitTexts, waitVerdict, type WaitGoal, type WaitedInstance } from '../../src/cli/wait.js';

const inst = (state: string, extra: Partial<WaitedInstance> = {}): WaitedInstance => ({ id: 'i-1', name: 'survival', state, ...extra });
const busy = { activeAction: { kind: 'start', commandId: 'cmd-1' } };

describe('waitVerdict', () => {
  const cases: [string, WaitGoal, WaitedInstance | undefined, string | undefined, string][] = [
    ['online reached', 'online', inst('online'), 'succeeded', 'done'],
    ['container running is not online', 'online', inst('starting'), 'succeeded', 'waiting'],
    ['online while an action still runs', 'online', inst('online', busy), 'running', 'waiting'],
    ['the command is still pending', 'online', inst('online'), 'pending', 'waiting'],
    ['degraded ends an online wait', 'online', inst('degraded'), 'succeeded', 'failed'],
    ['error ends any wait', 'stopped', inst('error'), undefined, 'failed'],
    ['intervention_required ends any wait', 'online', inst('intervention_required'), undefined, 'failed'],
    ['a failed command ends the wait', 'online', inst('starting'), 'failed', 'failed'],
    ['stopped reached', 'stopped', inst('stopped'), 'succeeded', 'done'],
    ['paused reached', 'paused', inst('paused'), undefined, 'done'],
    ['idle: any state once no action runs', 'idle', inst('online'), 'succeeded', 'done'],
    ['idle: not while the backup runs', 'idle', inst('online', busy), 'running', 'waiting'],
    ['gone: deleted', 'gone', undefined, undefined, 'done'],
    ['gone: still there', 'gone', inst('stopping', busy), 'running', 'waiting'],
    ['an instance that vanished fails an online wait', 'online', undefined, undefined, 'failed'],
  ];
  it.each(cases)('%s', (_name, goal, instance, commandStatus, verdict) => {
    expect(waitVerdict(goal, instance, commandStatus).kind).toBe(verdict);
  });
});

describe('waitTexts: each --wait speaks of what it waited for', () => {
  it.each([
    ['backup', 'backup of world done', 'backup of world failed: it is error'],
    ['restore', 'restore of world done', 'restore of world failed: it is error'],
    ['start', 'instance world is online', 'instance world did not become online: it is error'],
    ['stop', 'instance world is stopped', 'instance world did not become stopped: it is error'],
    ['pause', 'instance world is paused', 'instance world did not become paused: it is error'],
    ['update', 'instance world is online', 'instance world did not become online: it is error'],
    ['delete', 'instance world deleted', 'instance world did not become deleted: it is error'],
  ])('%s', (action, done, failed) => {
    const texts = waitTexts(GOAL_OF_ACTION[action]!, 'world', action);
    expect(texts.done).toBe(done);
    expect(texts.failed('it is error')).toBe(failed);
    expect(texts.done).not.toMatch(/is done/);
  });
});

describe('completion: which names an argument or option completes to', () => {
  it.each([
    ['instances get', 'name', 'instances'],
    ['i start', 'name', 'instances'],
    ['instances backup download', 'name', 'instances'],
    ['despawn', 'instance', 'instances'],
    ['idle-tiers', 'instance', 'instances'],
    ['hosts adopt', 'host', undefined],
    ['spawn', 'group', 'groups'],
    ['fleet', 'group', 'groups'],
    ['groups get', 'id', 'groups'],
    ['templates get', 'name', 'templates'],
    ['tokens create', 'name', undefined],
    ['context use', 'name', undefined],
    ['requests get', 'id', undefined],
  ])('%s <%s> → %s', (path, arg, kind) => expect(argumentKind(path, arg)).toBe(kind));
  it.each([
    ['--group', 'groups'],
    ['--to-group', 'groups'],
    ['--to-instance', 'instances'],
    ['--instance', 'instances'],
    ['--name', undefined],
    ['--host', undefined],
  ])('%s → %s', (flag, kind) => expect(optionKind(flag)).toBe(kind));
});

describe('classifyHealth', () => {
  const cases: [string, number, string | null, string, string][] = [
    ['orchestrator', 200, 'application/json', '{"status":"ok","version":"0.1.0","database":"sqlite"}', 'orchestrator'],
    ['agent', 200, 'application/json', '{"status":"ok","agentId":"host-a","version":"0.1.0","engine":"reachable"}', 'agent'],
    [
      'agent behind its token',
      401,
      'application/json',
      '{"error":{"code":"UNAUTHORIZED","message":"missing or wrong bearer token"}}',
      'agent',
    ],
    ['a web server', 200, 'text/html', '<!doctype html><html><body>hi</body></html>', 'other'],
    ['a 404 page', 404, 'text/html; charset=utf-8', '<html>not found</html>', 'other'],
    ['JSON without status', 200, 'application/json', '{"ok":true}', 'other'],
  ];
  it.each(cases)('%s', (_name, status, type, text, kind) => {
    expect(classifyHealth(status, type, text).kind).toBe(kind);
  });
  it('says it in one line, naming an agent as such', () => {
    expect(notOrchestratorMessage('http://h:1', { kind: 'orchestrator' })).toBeUndefined();
    expect(notOrchestratorMessage('http://h:1', { kind: 'agent', agentId: 'host-a' })).toMatch(
      /^http:\/\/h:1 is an EnderCloud agent \(host host-a\), not the orchestrator: [^\n]+$/,
    );
    expect(notOrchestratorMessage('http://h:1', classifyHealth(200, 'text/html', '<html>'))).toBe(
      'http://h:1 is not an EnderCloud orchestrator (GET /api/v1/health answered HTTP 200 with an HTML page): check the URL (ectl context ls, or ENDERCLOUD_URL)',
    );
  });
});

describe('parseAssignment', () => {
  const cases: [string, string, unknown][] = [
    ['MAX_PLAYERS=20', 'MAX_PLAYERS', 20],
    ['RATIO=-1.5', 'RATIO', -1.5],
    ['PVP=true', 'PVP', true],
    ['X=null', 'X', null],
    ['MOTD="20"', 'MOTD', '20'],
    ['MOTD=hello world', 'MOTD', 'hello world'],
    ['URL=a=b', 'URL', 'a=b'],
    ['EMPTY=', 'EMPTY', ''],
    ['V=1.2.3', 'V', '1.2.3'],
  ];
  it.each(cases)('%s', (text, key, value) => {
    expect(parseAssignment(text)).toEqual([key, value]);
  });
  it('refuses a word without =', () => expect(() => parseAssignment('=x')).toThrow(/KEY=VALUE/));
});

describe('small rules', () => {
  it('--confirm must equal the instance name exactly', () => {
    expect(() => checkConfirmFlag('survival', 'survival')).not.toThrow();
    expect(() => checkConfirmFlag('Survival', 'survival')).toThrow(/does not match/);
    // docs/cli.md: a typed confirmation that does not match exits 1 (a missing one is usage, 2).
    try {
      checkConfirmFlag('other', 'survival');
    } catch (err) {
      expect((err as CliError).exitCode).toBe(1);
    }
    expect.assertions(3);
  });
  it('INIT_CWD is used only when npm runs the ectl script of this package', () => {
    expect(callerDirectory({ npm_lifecycle_event: 'ectl', npm_package_name: 'endercloud', INIT_CWD: '/repo' }, '/repo/orchestrator')).toBe(
      '/repo',
    );
    expect(callerDirectory({ npm_lifecycle_event: 'deploy', npm_package_name: 'other', INIT_CWD: '/x' }, '/x/sub')).toBe('/x/sub');
    expect(callerDirectory({}, '/here')).toBe('/here');
  });
  it('an API hint to a manager-only endpoint becomes the ectl command and the token it needs', () => {
    expect(
      rewriteHints(
        'instance s is in error after a crash loop: reset it (POST /instances/:id/reset-crash-loop) after diagnosis, then start it',
      ),
    ).toBe(
      'instance s is in error after a crash loop: reset it (ectl instances reset-crash-loop NAME; it needs an admin or manager token) after diagnosis, then start it',
    );
  });
});

describe('completion', () => {
  const tree: CommandNode = {
    name: 'ectl',
    aliases: [],
    description: '',
    options: [{ flag: '--context', description: 'ctx' }],
    commands: [
      {
        name: 'instances',
        aliases: ['i'],
        description: "servers (one's)",
        options: [],
        commands: [{ name: 'ls', aliases: [], description: 'list', options: [{ flag: '--json', description: 'JSON' }], commands: [] }],
      },
    ],
  };
  it('lists every path, aliases included', () => {
    expect([...completionTable(tree).keys()]).toEqual(['', 'instances', 'instances ls', 'i', 'i ls']);
  });
  it('bash offers the sub-commands and options of each path; zsh reuses it; fish quotes descriptions', () => {
    const bash = completionScript('bash', tree);
    expect(bash).toContain(`'instances ls') echo '--json --help' ;;`);
    expect(bash).toContain(`'') echo 'instances i --context --help' ;;`);
    expect(bash).toMatch(/complete -o default -F _ectl ectl\n$/);
    expect(completionScript('zsh', tree)).toMatch(/^# ectl completion for zsh[^\n]*\nautoload -U \+X bashcompinit && bashcompinit\n/);
    expect(completionScript('fish', tree)).toContain(
      `complete -c ectl -n '__ectl_path_is \\'\\'' -f -a 'instances' -d 'servers (one\\'s)'`,
    );
  });
});
