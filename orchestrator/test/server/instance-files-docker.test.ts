// The files API and SFTP on the real Docker engine: a real in-process agent
// running the Minecraft-protocol test server and an in-process orchestrator.
// Path escapes are refused at the agent (`..`, a symlink the server planted,
// absolute names in an uploaded tar); the public routes follow the files
// scopes and audit writes (paths, never content); a 64 MiB upload streams with
// bounded buffering; Debian's `sftp` client uploads, lists, downloads, stays in
// its chroot and is refused without a files scope; every SFTP login, accepted
// or refused, is audited (never the password); a revoked token's open session
// is closed; and server.properties
// edited over the API is what the server reads after a restart.

import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orchestrator } from '../../src/server/orchestrator.js';
import { startSftpServer, type SftpListener } from '../../src/server/sftp/sftp-server.js';
import type { TestAgent } from '../support/agent-harness.js';
import { uniqueId } from '../support/docker.js';
import { tarBuffer, tarGzBuffer } from '../support/malicious-tar.js';
import { mcServerImageTag, pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import { silentLogger, type Loose } from './support.js';

const AGENT_ID = `${uniqueId('files')}-host`;
const MiB = 1024 * 1024;

let stack: RealAgentStack;
let agent: TestAgent;
let o: Orchestrator;
let call: RealAgentStack['call'];
let baseUrl: string;
let id: string;
let sftp: SftpListener;
const tokens: Record<'reader' | 'writer' | 'plain', string> = { reader: '', writer: '', plain: '' };
const scratch = mkdtempSync(join(tmpdir(), 'ec-files-'));

const instanceDir = () => join(agent.runtimeDirectory, 'instances', id);
const get = async (): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;
const waitIdle = (state: string) =>
  waitFor(
    `instance ${id} ${state}`,
    async () => {
      const i = await get();
      return i.state === state && !i.activeAction ? i : undefined;
    },
    60_000,
    100,
  );

/** A call straight to the agent's files API (with the agent token, and the epoch the SQLite orchestrator's sole lease holds). */
async function agentCall(method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  const res = await agent.app.inject({
    method: method as 'GET',
    url: `/api/v1/instances/${id}${url}`,
    headers: { authorization: `Bearer ${stack.agentToken}`, 'x-leader-epoch': '1', ...headers },
    ...(payload === undefined ? {} : { payload: payload as string }),
  });
  return { status: res.statusCode, body: res.headers['content-type']?.toString().includes('json') ? res.json() : res.body };
}

beforeAll(async () => {
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    env: {
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
      ENDERCLOUD_UNKNOWN_GRACE: '10m',
      ENDERCLOUD_FILE_UPLOAD_MAX_BYTES: '80MiB',
    },
    deps: { runBackupScheduler: false },
  });
  ({ agent, o, call } = stack);
  await o.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = o.app.server.address();
  baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // The production SFTP server (startOrchestrator starts the same one), on an ephemeral port.
  sftp = await startSftpServer({
    files: o.ctx.files,
    tokens: o.ctx.tokens,
    audit: o.ctx.auditLog,
    clock: o.ctx.clock,
    // Short, so the idle-session revocation check is seen within the test.
    recheckMs: 500,
    dataDir: stack.dataDir,
    host: '127.0.0.1',
    port: 0,
    logger: silentLogger,
  });
  expect(
    (
      await call('PUT', '/templates/mc/versions/1', {
        image: mcServerImageTag(),
        resources: { memoryMb: 256 },
        containerPort: 25565,
        restartPolicy: 'on-failure',
        readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
        stop: { signal: 'SIGTERM', timeoutMs: 2000 },
        // The egg's file_denylist: refused over the API and SFTP alike.
        fileDenylist: ['denied.txt', '/locked/'],
      })
    ).status,
  ).toBe(201);
  expect(
    (await call('PUT', '/groups/mc', { kind: 'persistent', variants: [{ id: 'plain', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
  const created = await call('POST', '/instances', { groupId: 'mc', variantId: 'plain', name: 'files-world' });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  id = created.body.id as string;
  await waitIdle('online');
  for (const [name, scopes] of [
    ['reader', ['files:read']],
    ['writer', ['files:write']],
    ['plain', ['read']],
  ] as const) {
    const res = await call('POST', '/tokens', { name: `files-${name}`, scopes });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    tokens[name] = res.body.secret as string;
  }
}, 180_000);

afterAll(async () => {
  try {
    await sftp?.close();
    await stack?.close();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

describe('agent files API: path safety on the real engine (container running)', () => {
  it('refuses .. and absolute names', async () => {
    for (const path of ['/../etc', '/a/../../etc', '/%2e%2e/x']) {
      const res = await agentCall('GET', `/files?path=${encodeURIComponent(path)}`);
      if (path.includes('%')) continue; // a literal "%2e%2e" name is merely missing
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('FILE_PATH_INVALID');
    }
    const nul = await agentCall('GET', `/files/content?path=${encodeURIComponent('/server\u0000.properties')}`);
    expect(nul.status).toBe(400);
  });

  it('never follows a symlink planted in the directory, to a directory or a file', async () => {
    symlinkSync('/etc', join(instanceDir(), 'escape'));
    symlinkSync('/etc/passwd', join(instanceDir(), 'pw'));
    for (const [method, url] of [
      ['GET', '/files?path=/escape'],
      ['GET', '/files/content?path=/escape/passwd'],
      ['GET', '/files/content?path=/pw'],
    ] as const) {
      const res = await agentCall(method, url);
      expect(res.status, url).toBe(400);
      expect(res.body.error.code, url).toBe('FILE_PATH_INVALID');
    }
    const write = await agentCall('PUT', '/files/content?path=/escape/endercloud-test', 'x', {
      'content-type': 'application/octet-stream',
    });
    expect(write.body.error.code).toBe('FILE_PATH_INVALID');
    expect(existsSync('/etc/endercloud-test')).toBe(false);
    const mk = await agentCall('POST', '/files/directory', { path: '/escape/endercloud-dir' });
    expect(mk.body.error.code).toBe('FILE_PATH_INVALID');
    // The listing shows the links as links; deleting one removes the link, never its target.
    const list = await agentCall('GET', '/files?path=/');
    expect(list.body.entries).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'escape', type: 'symlink' })]));
    expect((await agentCall('POST', '/files/delete', { paths: ['/escape', '/pw'] })).body).toEqual({ deleted: ['/escape', '/pw'] });
    expect(existsSync('/etc/passwd')).toBe(true);
  });

  it('refuses a tar with absolute or .. names, or a link, and leaves nothing behind', async () => {
    const cases: Record<string, Buffer> = {
      'abs.tar': await tarBuffer([{ header: { name: '/etc/endercloud-evil', type: 'file' }, body: 'x' }]),
      'dotdot.tar.gz': await tarGzBuffer([{ header: { name: 'ok/../../endercloud-evil', type: 'file' }, body: 'x' }]),
      'link.tgz': await tarGzBuffer([{ header: { name: 'l', type: 'symlink', linkname: '/etc' } }]),
    };
    for (const [name, archive] of Object.entries(cases)) {
      const up = await agentCall('PUT', `/files/content?path=/${name}`, archive, { 'content-type': 'application/octet-stream' });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      const res = await agentCall('POST', '/files/extract', { path: `/${name}` });
      expect(res.status, name).toBe(422);
      expect(res.body.error.code).toBe('INVALID_ARCHIVE');
    }
    expect(existsSync('/etc/endercloud-evil')).toBe(false);
    const names = (await agentCall('GET', '/files?path=/')).body.entries.map((e: Loose) => e.name as string);
    expect(names.filter((n: string) => n.startsWith('.endercloud-') || n === 'l' || n === 'ok')).toEqual([]);
    const zip = await agentCall('POST', '/files/extract', { path: '/world.zip' });
    expect(zip.body.error.code).toBe('NOT_IMPLEMENTED');
  });
});

describe('public files routes', () => {
  const as = (token: string) => ({ token, headers: { 'content-type': 'application/octet-stream' } });

  it('files:read lists and downloads but may not write; plain read sees no contents', async () => {
    const list = await call('GET', `/instances/${id}/files?path=/`, undefined, { token: tokens.reader });
    expect(list.status).toBe(200);
    expect(list.body.path).toBe('/');
    const entries = list.body.entries as Loose[];
    expect(entries.some((e) => e.name === 'level.json' && e.type === 'file' && /^0[0-7]{3}$/.test(e.mode as string))).toBe(true);
    const dirsFirst = entries.findIndex((e) => e.type !== 'directory');
    expect(entries.slice(dirsFirst).every((e) => e.type !== 'directory')).toBe(true);
    const content = await call('GET', `/instances/${id}/files/content?path=/level.json`, undefined, { token: tokens.reader });
    expect(content.status).toBe(200);
    expect(content.raw.equals(readFileSync(join(instanceDir(), 'level.json')))).toBe(true);
    const refused = await call('PUT', `/instances/${id}/files/content?path=/x.txt`, 'x', as(tokens.reader));
    expect(refused.status).toBe(403);
    for (const url of [`/instances/${id}/files?path=/`, `/instances/${id}/files/content?path=/level.json`]) {
      expect((await call('GET', url, undefined, { token: tokens.plain })).status, url).toBe(403);
    }
  });

  it('files:write writes, makes directories, renames, archives, extracts and deletes; each write is audited without content', async () => {
    const secret = 'the-content-must-not-reach-the-audit';
    const put = await call('PUT', `/instances/${id}/files/content?path=/notes.txt`, secret, as(tokens.writer));
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual({ path: '/notes.txt', size: secret.length });
    expect(readFileSync(join(instanceDir(), 'notes.txt'), 'utf8')).toBe(secret);
    const w = { token: tokens.writer };
    expect((await call('POST', `/instances/${id}/files/directory`, { path: '/docs' }, w)).body).toEqual({ path: '/docs' });
    expect((await call('POST', `/instances/${id}/files/directory`, { path: '/docs' }, w)).body.error.code).toBe('FILE_EXISTS');
    expect((await call('POST', `/instances/${id}/files/rename`, { from: '/notes.txt', to: '/docs/notes.txt' }, w)).body).toEqual({
      from: '/notes.txt',
      to: '/docs/notes.txt',
    });
    expect((await call('POST', `/instances/${id}/files/rename`, { from: '/level.json', to: '/docs/notes.txt' }, w)).status).toBe(409);
    const archived = await call('POST', `/instances/${id}/files/archive`, { paths: ['/docs'] }, w);
    expect(archived.status, JSON.stringify(archived.body)).toBe(200);
    expect(archived.body.path).toMatch(/^\/archive-\d{8}-\d{6}\.tar\.gz$/);
    expect((await call('POST', `/instances/${id}/files/extract`, { path: archived.body.path }, w)).body.error.code).toBe('FILE_EXISTS');
    expect((await call('POST', `/instances/${id}/files/directory`, { path: '/restored' }, w)).status).toBe(200);
    const extracted = await call('POST', `/instances/${id}/files/extract`, { path: archived.body.path, destination: '/restored' }, w);
    expect(extracted.body).toEqual({ destination: '/restored', entries: 2 });
    expect(readFileSync(join(instanceDir(), 'restored', 'docs', 'notes.txt'), 'utf8')).toBe(secret);
    const del = await call('POST', `/instances/${id}/files/delete`, { paths: ['/restored', archived.body.path] }, w);
    expect(del.body).toEqual({ deleted: ['/restored', archived.body.path] });
    expect((await call('GET', `/instances/${id}/files/content?path=/docs`, undefined, w)).body.error.code).toBe('FILE_IS_DIRECTORY');
    expect((await call('GET', `/instances/${id}/files/content?path=/nope`, undefined, w)).status).toBe(404);
    expect((await call('GET', `/instances/${id}/files?path=/../x`, undefined, w)).body.error.code).toBe('FILE_PATH_INVALID');

    const audit = (await call('GET', '/audit?limit=100')).body.entries as Loose[];
    const mine = audit.filter((e) => String(e.action).startsWith('file.') && e.targetId === id);
    expect(new Set(mine.map((e) => e.action))).toEqual(
      new Set(['file.write', 'file.mkdir', 'file.rename', 'file.archive', 'file.extract', 'file.delete']),
    );
    expect(mine.find((e) => e.action === 'file.write' && e.result === 'ok')).toMatchObject({
      actor: 'files-writer',
      params: { path: '/notes.txt', size: secret.length, via: 'http' },
    });
    expect(mine.find((e) => e.action === 'file.mkdir' && e.result === 'error')).toMatchObject({ errorCode: 'FILE_EXISTS' });
    expect(audit.find((e) => e.action === 'file.write' && e.actor === 'files-reader')).toMatchObject({
      result: 'error',
      errorCode: 'FORBIDDEN',
    });
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  it('streams a 64 MiB upload and download without holding the file in memory', async () => {
    const size = 64 * MiB;
    const block = randomBytes(MiB);
    const hash = createHash('sha256');
    let sent = 0;
    // A pull stream (Node 20's Readable.toWeb ignores backpressure and would hold the whole body itself).
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (sent >= size) return void controller.close();
          const chunk = Buffer.from(block);
          chunk.writeUInt32BE(sent / MiB, 0); // every MiB differs
          hash.update(chunk);
          sent += chunk.length;
          controller.enqueue(chunk);
        },
      },
      { highWaterMark: 1 },
    );
    // In flight = sent by the client − on the host's disk (the temp file beside the target). A
    // buffered body would let the client finish long before the disk catches up.
    const onDisk = () => {
      const tmp = readdirSync(instanceDir()).find((n) => n.startsWith('.endercloud-upload-'));
      try {
        return tmp ? statSync(join(instanceDir(), tmp)).size : undefined;
      } catch {
        return undefined;
      }
    };
    let maxInFlight = 0;
    const sampler = setInterval(() => {
      const written = onDisk();
      if (written !== undefined) maxInFlight = Math.max(maxInFlight, sent - written);
    }, 10);
    try {
      const res = await fetch(`${baseUrl}/api/v1/instances/${id}/files/content?path=/big.bin`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens.writer}`, 'content-type': 'application/octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await res.json()).toEqual({ path: '/big.bin', size });
      const down = await fetch(`${baseUrl}/api/v1/instances/${id}/files/content?path=/big.bin`, {
        headers: { authorization: `Bearer ${tokens.reader}` },
      });
      expect(down.headers.get('content-length')).toBe(String(size));
      const back = createHash('sha256');
      for await (const chunk of down.body as unknown as AsyncIterable<Uint8Array>) back.update(chunk);
      expect(back.digest('hex')).toBe(hash.digest('hex'));
    } finally {
      clearInterval(sampler);
    }
    // Only socket and stream buffers between the client and the disk, never the file.
    expect(maxInFlight).toBeGreaterThan(0);
    expect(maxInFlight).toBeLessThan(16 * MiB);
    const tooBig = await fetch(`${baseUrl}/api/v1/instances/${id}/files/content?path=/huge.bin`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tokens.writer}`, 'content-type': 'application/octet-stream', 'content-length': String(81 * MiB) },
      body: 'x',
    }).catch(() => undefined);
    if (tooBig) expect(tooBig.status).toBe(413);
    expect((await call('POST', `/instances/${id}/files/delete`, { paths: ['/big.bin'] }, { token: tokens.writer })).status).toBe(200);
  }, 120_000);
});

describe('SFTP with the real sftp client', () => {
  const askpass = join(scratch, 'askpass.sh');

  /** Runs Debian's sftp in batch mode (async: the server answers from this very process). */
  async function sftpRun(user: string, secret: string, commands: string[]): Promise<{ code: number | null; out: string }> {
    writeFileSync(askpass, `#!/bin/sh\nprintf '%s\\n' '${secret}'\n`);
    chmodSync(askpass, 0o700);
    const batch = join(scratch, `batch-${randomBytes(3).toString('hex')}`);
    writeFileSync(batch, `${commands.join('\n')}\n`);
    // BatchMode=no before -b: sftp -b adds BatchMode=yes (no password prompt), and ssh keeps the first value given.
    const args = [
      '-o',
      'BatchMode=no',
      '-b',
      batch,
      '-P',
      String(sftp.port),
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'PreferredAuthentications=password',
      '-o',
      'NumberOfPasswordPrompts=1',
      `${user}@127.0.0.1`,
    ];
    return new Promise((resolve) => {
      const child = execFile(
        'sftp',
        args,
        {
          cwd: scratch,
          encoding: 'utf8',
          timeout: 30_000,
          env: { ...process.env, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' },
        },
        (_err, stdout, stderr) => resolve({ code: child.exitCode, out: `${stdout}\n${stderr}` }),
      );
    });
  }

  it('uploads, lists, downloads, and stays inside the instance directory', async () => {
    writeFileSync(join(scratch, 'hello.txt'), 'hello over sftp\n');
    const r = await sftpRun(`files-writer.${id}`, tokens.writer, [
      'put hello.txt /hello.txt',
      'mkdir /sub',
      'rename /hello.txt /sub/hello.txt',
      'ls -l /sub',
      'get /sub/hello.txt back.txt',
      'cd ..',
      'cd ..',
      'pwd',
      'ls',
    ]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('Remote working directory: /');
    expect(r.out).toContain('hello.txt');
    expect(r.out).toContain('level.json');
    expect(readFileSync(join(scratch, 'back.txt'), 'utf8')).toBe('hello over sftp\n');
    expect(readFileSync(join(instanceDir(), 'sub', 'hello.txt'), 'utf8')).toBe('hello over sftp\n');
    // `..` is clamped at the session's root: /etc/passwd there is the instance's (absent), never the host's.
    for (const target of ['/etc/passwd', '../../../../etc/passwd']) {
      const escape = await sftpRun(`files-writer.${id}`, tokens.writer, [`get ${target} stolen.txt`]);
      expect(escape.code, escape.out).not.toBe(0);
      expect(existsSync(join(scratch, 'stolen.txt'))).toBe(false);
    }
    const audit = (await call('GET', '/audit?limit=50')).body.entries as Loose[];
    expect(audit.find((e) => e.action === 'file.write' && (e.params as Loose).via === 'sftp')).toMatchObject({
      actor: 'files-writer',
      result: 'ok',
      params: { path: '/hello.txt' },
    });
    const rm = await sftpRun(`files-writer.${id}`, tokens.writer, ['rm /sub/hello.txt', 'rmdir /sub']);
    expect(rm.code, rm.out).toBe(0);
    expect(existsSync(join(instanceDir(), 'sub'))).toBe(false);
  });

  it('a files:read session may read but not write; a token without a files scope cannot log in', async () => {
    const ro = await sftpRun(`files-reader.${id}`, tokens.reader, ['get /level.json level-copy.json']);
    expect(ro.code, ro.out).toBe(0);
    expect(readFileSync(join(scratch, 'level-copy.json')).equals(readFileSync(join(instanceDir(), 'level.json')))).toBe(true);
    const write = await sftpRun(`files-reader.${id}`, tokens.reader, ['put hello.txt /ro.txt']);
    expect(write.code, write.out).not.toBe(0);
    expect(write.out).toMatch(/read-only|Permission denied/i);
    expect(existsSync(join(instanceDir(), 'ro.txt'))).toBe(false);
    const plain = await sftpRun(`files-plain.${id}`, tokens.plain, ['ls']);
    expect(plain.code, plain.out).toBe(255);
    const wrongName = await sftpRun(`files-reader.${id}`, tokens.writer, ['ls']);
    expect(wrongName.code, wrongName.out).toBe(255);

    // Every password login is audited: actor, instance, remote address, why a refusal; never the password.
    const audit = (await call('GET', '/audit?limit=200')).body.entries as Loose[];
    const logins = audit.filter((e) => e.action === 'sftp.login');
    expect(logins.find((e) => e.actor === 'files-reader' && e.result === 'ok')).toMatchObject({
      targetKind: 'instance',
      targetId: id,
      params: { user: `files-reader.${id}`, remoteAddress: '127.0.0.1', via: 'sftp', access: 'read-only' },
      errorCode: null,
    });
    expect(logins.find((e) => e.actor === 'files-plain')).toMatchObject({
      result: 'error',
      errorCode: 'FORBIDDEN',
      params: { user: `files-plain.${id}`, remoteAddress: '127.0.0.1', reason: expect.stringContaining('no files scope') },
    });
    expect(logins.find((e) => e.result === 'error' && (e.params as Loose).user === `files-reader.${id}`)).toMatchObject({
      actor: 'anonymous',
      errorCode: 'UNAUTHORIZED',
      params: { remoteAddress: '127.0.0.1', reason: 'unknown user or wrong token' },
    });
    const text = JSON.stringify(audit);
    for (const secret of Object.values(tokens)) expect(text).not.toContain(secret);
  });

  it("the template's file denylist: denied files are refused over SFTP and the API, reading and writing", async () => {
    writeFileSync(join(instanceDir(), 'denied.txt'), 'not for you\n');
    writeFileSync(join(scratch, 'hello.txt'), 'hello over sftp\n');
    for (const cmd of [
      'get /denied.txt got-denied.txt',
      'get /sub/../denied.txt got-denied.txt',
      'put hello.txt /locked/x.txt',
      'put hello.txt /deep/denied.txt',
    ]) {
      const r = await sftpRun(`files-writer.${id}`, tokens.writer, [cmd]);
      expect(r.code, r.out).not.toBe(0);
      expect(r.out, cmd).toMatch(/denylist|Permission denied/);
    }
    expect(existsSync(join(scratch, 'got-denied.txt'))).toBe(false);
    expect(existsSync(join(instanceDir(), 'locked'))).toBe(false);
    const w = { token: tokens.writer };
    const read = await call('GET', `/instances/${id}/files/content?path=/./denied.txt`, undefined, w);
    expect(read.status).toBe(403);
    expect(read.body.error).toMatchObject({ code: 'FILE_DENIED', details: { path: '/denied.txt', pattern: 'denied.txt' } });
    expect(read.body.error.message).toContain("denied by the template's file denylist");
    const mk = await call('POST', `/instances/${id}/files/directory`, { path: '/locked' }, w);
    expect(mk.body.error?.code, JSON.stringify(mk.body)).toBe('FILE_DENIED');
    // Anything else stays reachable, and the denied file is untouched.
    expect((await sftpRun(`files-writer.${id}`, tokens.writer, ['get /level.json lv.json'])).code).toBe(0);
    expect(readFileSync(join(instanceDir(), 'denied.txt'), 'utf8')).toBe('not for you\n');
  });

  it('revoking the token closes its open session: the server disconnects the client within the bound and the next upload never lands', async () => {
    const created = await call('POST', '/tokens', { name: 'files-revoked', scopes: ['files:write'] });
    expect(created.status).toBe(201);
    writeFileSync(askpass, `#!/bin/sh\nprintf '%s\\n' '${created.body.secret as string}'\n`);
    chmodSync(askpass, 0o700);
    writeFileSync(join(scratch, 'late.txt'), 'after the revocation\n');
    // Commands from stdin, one at a time: the session stays open between them.
    const child = spawn(
      'sftp',
      [
        '-o',
        'BatchMode=no',
        '-b',
        '-',
        '-P',
        String(sftp.port),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'PreferredAuthentications=password',
        '-o',
        'NumberOfPasswordPrompts=1',
        `files-revoked.${id}@127.0.0.1`,
      ],
      { cwd: scratch, env: { ...process.env, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' } },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      child.stdin.write('ls /\n');
      await waitFor('the first listing', async () => out.includes('level.json'), 20_000);
      const revoked = await call('DELETE', `/tokens/${created.body.id as string}`);
      expect(revoked.status).toBe(200);
      const t0 = Date.now();
      child.stdin.write('put late.txt /late.txt\n');
      // Closed within the bound (a request re-checks the token; an idle session within recheckMs).
      await waitFor('the server closed the session', async () => /Received disconnect|Connection closed/.test(out), 10_000);
      expect(Date.now() - t0).toBeLessThan(10_000);
      child.stdin.end();
      const code = await Promise.race([exited, new Promise<'open'>((r) => setTimeout(() => r('open'), 10_000))]);
      // The client is gone (sftp reading its batch from stdin exits once that ends, whatever happened before).
      expect(code, out).not.toBe('open');
      expect(existsSync(join(instanceDir(), 'late.txt'))).toBe(false);
    } finally {
      child.kill();
    }
  });
});

describe('an edited file is what the server reads after a restart', () => {
  it('server.properties motd written over the API shows in the status ping', async () => {
    const motd = 'Edited over the files API';
    const put = await call('PUT', `/instances/${id}/files/content?path=/server.properties`, `motd=${motd}\n`, {
      token: tokens.writer,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await call('POST', `/instances/${id}/restart`)).status).toBe(202);
    const online = await waitIdle('online');
    const status = await pingStatus(online.endpoint.host as string, online.endpoint.port as number);
    expect(status.motd).toBe(motd);
  }, 90_000);
});
