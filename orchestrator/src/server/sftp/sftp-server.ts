// SFTP for instance files (docs/orchestrator.md "SFTP"): an ssh2 server that
// speaks only the sftp subsystem. Login `<token name>.<instance id>` with that
// API token's secret as the password; `files:write` gives a read-write session,
// `files:read` a read-only one, anything else is refused. A session sees only
// its instance's data directory: every path is normalised inside `/` (`..` at
// the top stays at the top) and goes through the same InstanceFileService as
// the HTTP files routes, so the host's path checks and the audit are the same.
// The host key is generated on first start at <data dir>/sftp_host_ed25519.
// Every password login, accepted or refused, is an audit entry (`sftp.login`:
// actor, instance, remote address, the reason of a refusal; never the
// password). A revocation on this replica closes the token's open sessions at
// once; a session also re-checks its token before each request (at most once a
// second) and every `recheckMs` while idle (revocations by another replica):
// once the token is revoked the request fails and the connection is closed.

import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import ssh2, { type Attributes, type AuthContext, type Connection, type FileEntry as SftpName, type SFTPWrapper } from 'ssh2';
import type { FileEntry } from '../../contracts/agent-api.js';
import type { AuditEvent } from '../../domain/index.js';
import { AppError, isAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { FILES_READ, FILES_WRITE, hasScope } from '../auth/scopes.js';
import type { TokenService } from '../auth/tokens.js';
import type { FileCaller, InstanceFileService } from '../services/instance-files.js';

const { Server, utils } = ssh2;
const { OPEN_MODE, STATUS_CODE } = utils.sftp;

export const SFTP_HOST_KEY_FILE = 'sftp_host_ed25519';
/** Out-of-order WRITE data held until the gap before it fills. */
const MAX_PENDING_WRITE_BYTES = 8 * 1024 * 1024;
const NAMES_PER_READDIR = 100;
/** How long a token check answers for the requests after it. */
const TOKEN_CHECK_TTL_MS = 1000;
/** Default bound on how long an idle session of a revoked token stays open. */
export const SFTP_TOKEN_RECHECK_MS = 5000;

export interface SftpServerOptions {
  files: InstanceFileService;
  tokens: Pick<TokenService, 'authenticate' | 'isActive' | 'onRevoked'>;
  /** The API's audit trail (AuditLog): every login attempt with a password. */
  audit: { append(entry: Omit<AuditEvent, 'id'>): Promise<void> };
  clock: { now(): number };
  /** Bound on how long an idle session outlives its token's revocation; default SFTP_TOKEN_RECHECK_MS. */
  recheckMs?: number;
  dataDir: string;
  host: string;
  /** 0: an ephemeral port (tests). */
  port: number;
  logger: Logger;
}

export interface SftpListener {
  host: string;
  port: number;
  close(): Promise<void>;
}

/** The host key, generated (ed25519, OpenSSH format, mode 0600) when the data dir has none. Never logged. */
export async function loadHostKey(dataDir: string): Promise<{ key: string; generated: boolean }> {
  const file = path.join(dataDir, SFTP_HOST_KEY_FILE);
  try {
    return { key: await readFile(file, 'utf8'), generated: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const pair = utils.generateKeyPairSync('ed25519');
  try {
    await writeFile(file, pair.private, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { key: await readFile(file, 'utf8'), generated: false }; // another start won the race
    throw err;
  }
  await writeFile(`${file}.pub`, `${pair.public}\n`, { mode: 0o644 });
  return { key: pair.private, generated: true };
}

/** A client path inside the session's root: absolute, `.`/`..`/empty segments resolved, never above `/`. */
export function chrootPath(raw: string): string {
  const parts: string[] = [];
  for (const segment of raw.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') parts.pop();
    else parts.push(segment);
  }
  return `/${parts.join('/')}`;
}

/** The SFTP status for an error of the files service. */
function statusOf(err: unknown): { code: number; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (!isAppError(err)) return { code: STATUS_CODE.FAILURE, message };
  switch (err.code) {
    case 'FILE_NOT_FOUND':
    case 'INSTANCE_NOT_FOUND':
      return { code: STATUS_CODE.NO_SUCH_FILE, message };
    case 'FILE_PATH_INVALID':
    case 'FILE_DENIED':
    case 'FORBIDDEN':
    case 'UNAUTHORIZED':
      return { code: STATUS_CODE.PERMISSION_DENIED, message };
    case 'NOT_IMPLEMENTED':
      return { code: STATUS_CODE.OP_UNSUPPORTED, message };
    default:
      return { code: STATUS_CODE.FAILURE, message };
  }
}

const TYPE_BITS = { directory: 0o040000, file: 0o100000, symlink: 0o120000 } as const;

function attrsOf(e: Pick<FileEntry, 'type' | 'size' | 'modifiedAt' | 'mode'>): Attributes {
  const seconds = Math.floor(e.modifiedAt / 1000);
  return { mode: TYPE_BITS[e.type] | parseInt(e.mode, 8), uid: 0, gid: 0, size: e.size, atime: seconds, mtime: seconds };
}

function longname(e: FileEntry): string {
  const perms = parseInt(e.mode, 8);
  const rwx = (bits: number) => `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${bits & 1 ? 'x' : '-'}`;
  const kind = e.type === 'directory' ? 'd' : e.type === 'symlink' ? 'l' : '-';
  const date = new Date(e.modifiedAt).toISOString().slice(0, 16).replace('T', ' ');
  return `${kind}${rwx(perms >> 6)}${rwx(perms >> 3)}${rwx(perms)} 1 server server ${String(e.size).padStart(10)} ${date} ${e.name}`;
}

/** Up to `n` bytes from the stream's current position (fewer only at its end). */
async function readUpTo(stream: Readable, n: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < n) {
    const chunk = stream.read() as Buffer | null;
    if (chunk === null) {
      if (stream.readableEnded || stream.destroyed) break;
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => {
          stream.off('readable', ok).off('end', ok).off('error', done).off('close', ok);
          if (err) reject(err);
          else resolve();
        };
        const ok = () => done();
        stream.once('readable', ok).once('end', ok).once('error', done).once('close', ok);
      });
      continue;
    }
    if (got + chunk.length > n) {
      stream.unshift(chunk.subarray(n - got));
      parts.push(chunk.subarray(0, n - got));
      got = n;
    } else {
      parts.push(chunk);
      got += chunk.length;
    }
  }
  return Buffer.concat(parts);
}

type Handle =
  | { kind: 'dir'; entries: FileEntry[]; next: number; attrs: Attributes }
  | { kind: 'read'; path: string; entry: FileEntry; stream?: Readable; pos: number; chain: Promise<void> }
  | {
      kind: 'write';
      path: string;
      pass: PassThrough;
      done: Promise<unknown>;
      failure?: unknown;
      expected: number;
      pending: Map<number, Buffer>;
      pendingBytes: number;
    };

/** One authenticated sftp channel, bound to one instance. */
class SftpSession {
  private readonly handles = new Map<number, Handle>();
  private nextHandle = 1;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly files: InstanceFileService,
    private readonly instanceId: string,
    private readonly writable: boolean,
    private readonly caller: FileCaller,
    /** Throws UNAUTHORIZED once the session's token is revoked (and closes the connection). */
    private readonly tokenGuard: () => Promise<void>,
  ) {}

  attach(): void {
    const s = this.sftp;
    const run = (reqId: number, fn: () => Promise<void>) => {
      this.tokenGuard()
        .then(fn)
        .catch((err: unknown) => {
          const { code, message } = statusOf(err);
          s.status(reqId, code, message);
        });
    };
    const refuseReadOnly = (reqId: number): boolean => {
      if (this.writable) return false;
      s.status(reqId, STATUS_CODE.PERMISSION_DENIED, 'this SFTP session is read-only (the token has files:read, not files:write)');
      return true;
    };
    s.on('REALPATH', (reqId: number, p: string) => {
      const abs = chrootPath(p);
      s.name(reqId, [{ filename: abs, longname: abs, attrs: {} as Attributes }]);
    });
    const stat = (reqId: number, p: string) =>
      run(reqId, async () => s.attrs(reqId, attrsOf(await this.files.stat(this.instanceId, chrootPath(p), this.caller))));
    s.on('STAT', stat);
    s.on('LSTAT', stat);
    s.on('FSTAT', (reqId: number, handle: Buffer) => {
      const h = this.handleOf(reqId, handle);
      if (!h) return;
      if (h.kind === 'dir') s.attrs(reqId, h.attrs);
      else if (h.kind === 'read') s.attrs(reqId, attrsOf(h.entry));
      else s.attrs(reqId, attrsOf({ type: 'file', size: h.expected, modifiedAt: Date.now(), mode: '0644' }));
    });
    const noAttributes = (reqId: number) =>
      s.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'changing permissions, owners or times is not supported over this SFTP server');
    s.on('SETSTAT', noAttributes);
    s.on('FSETSTAT', noAttributes);
    s.on('READLINK', (reqId: number) => s.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'symbolic links are not followed or read here'));
    s.on('SYMLINK', (reqId: number) => s.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'creating symbolic links is not supported'));
    s.on('OPENDIR', (reqId: number, p: string) =>
      run(reqId, async () => {
        const dir = chrootPath(p);
        const [list, self] = await Promise.all([
          this.files.list(this.instanceId, dir, this.caller),
          this.files.stat(this.instanceId, dir, this.caller),
        ]);
        s.handle(reqId, this.addHandle({ kind: 'dir', entries: list.entries, next: 0, attrs: attrsOf(self) }));
      }),
    );
    s.on('READDIR', (reqId: number, handle: Buffer) => {
      const h = this.handleOf(reqId, handle);
      if (!h) return;
      if (h.kind !== 'dir') return void s.status(reqId, STATUS_CODE.FAILURE, 'not a directory handle');
      if (h.next >= h.entries.length) return void s.status(reqId, STATUS_CODE.EOF);
      const batch = h.entries.slice(h.next, h.next + NAMES_PER_READDIR);
      h.next += batch.length;
      s.name(
        reqId,
        batch.map((e): SftpName => ({ filename: e.name, longname: longname(e), attrs: attrsOf(e) })),
      );
    });
    s.on('OPEN', (reqId: number, filename: string, flags: number) =>
      run(reqId, async () => {
        const p = chrootPath(filename);
        // A denied file is refused at the open: a client creates its local copy only after it.
        await this.files.assertAllowed(this.instanceId, p);
        if ((flags & OPEN_MODE.WRITE) === 0) {
          const entry = await this.files.stat(this.instanceId, p, this.caller);
          if (entry.type !== 'file') return void s.status(reqId, STATUS_CODE.FAILURE, `${p} is a ${entry.type}, not a file`);
          s.handle(reqId, this.addHandle({ kind: 'read', path: p, entry, pos: 0, chain: Promise.resolve() }));
          return;
        }
        if (refuseReadOnly(reqId)) return;
        if (flags & OPEN_MODE.READ)
          return void s.status(
            reqId,
            STATUS_CODE.OP_UNSUPPORTED,
            'opening a file for reading and writing at once is not supported: files are written whole',
          );
        if (flags & OPEN_MODE.APPEND)
          return void s.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'appending is not supported: files are written whole');
        if (flags & OPEN_MODE.EXCL || !(flags & OPEN_MODE.TRUNC)) {
          const existing = await this.files.stat(this.instanceId, p, this.caller).catch(() => undefined);
          if (existing && flags & OPEN_MODE.EXCL) return void s.status(reqId, STATUS_CODE.FAILURE, `${p} already exists`);
          if (existing && existing.size > 0 && !(flags & OPEN_MODE.TRUNC)) {
            return void s.status(
              reqId,
              STATUS_CODE.OP_UNSUPPORTED,
              `writing into part of ${p} is not supported: files are written whole (open with truncate)`,
            );
          }
        }
        const pass = new PassThrough({ highWaterMark: 1024 * 1024 });
        const h: Handle = { kind: 'write', path: p, pass, done: Promise.resolve(), expected: 0, pending: new Map(), pendingBytes: 0 };
        h.done = this.files.write(this.instanceId, p, pass, this.caller).catch((err: unknown) => {
          h.failure = err;
        });
        s.handle(reqId, this.addHandle(h));
      }),
    );
    s.on('READ', (reqId: number, handle: Buffer, offset: number, len: number) => {
      const h = this.handleOf(reqId, handle);
      if (!h) return;
      if (h.kind !== 'read') return void s.status(reqId, STATUS_CODE.FAILURE, 'not a handle opened for reading');
      h.chain = h.chain
        .then(() => this.tokenGuard())
        .then(() => this.serveRead(reqId, h, offset, len))
        .catch((err: unknown) => {
          const { code, message } = statusOf(err);
          s.status(reqId, code, message);
        });
    });
    s.on('WRITE', (reqId: number, handle: Buffer, offset: number, data: Buffer) => {
      const h = this.handleOf(reqId, handle);
      if (!h) return;
      if (h.kind !== 'write') return void s.status(reqId, STATUS_CODE.FAILURE, 'not a handle opened for writing');
      run(reqId, () => this.serveWrite(reqId, h, offset, data));
    });
    s.on('CLOSE', (reqId: number, handle: Buffer) => {
      const h = this.handleOf(reqId, handle);
      if (!h) return;
      this.handles.delete(handle.readUInt32BE(0));
      if (h.kind === 'dir') return void s.status(reqId, STATUS_CODE.OK);
      if (h.kind === 'read') {
        h.stream?.destroy();
        return void s.status(reqId, STATUS_CODE.OK);
      }
      run(reqId, async () => {
        if (h.pending.size > 0)
          h.pass.destroy(new Error(`the client left a gap in ${h.path} before byte ${Math.min(...h.pending.keys())}`));
        else h.pass.end();
        await h.done;
        if (h.failure !== undefined) throw h.failure;
        s.status(reqId, STATUS_CODE.OK);
      });
    });
    s.on('MKDIR', (reqId: number, p: string) => {
      if (refuseReadOnly(reqId)) return;
      run(reqId, async () => {
        await this.files.mkdir(this.instanceId, chrootPath(p), this.caller);
        s.status(reqId, STATUS_CODE.OK);
      });
    });
    s.on('RMDIR', (reqId: number, p: string) => {
      if (refuseReadOnly(reqId)) return;
      run(reqId, async () => {
        const dir = chrootPath(p);
        const entry = await this.files.stat(this.instanceId, dir, this.caller);
        if (entry.type !== 'directory') return void s.status(reqId, STATUS_CODE.FAILURE, `${dir} is not a directory`);
        if ((await this.files.list(this.instanceId, dir, this.caller)).entries.length > 0)
          return void s.status(reqId, STATUS_CODE.FAILURE, `${dir} is not empty`);
        await this.files.remove(this.instanceId, [dir], this.caller);
        s.status(reqId, STATUS_CODE.OK);
      });
    });
    s.on('REMOVE', (reqId: number, p: string) => {
      if (refuseReadOnly(reqId)) return;
      run(reqId, async () => {
        const file = chrootPath(p);
        const entry = await this.files.stat(this.instanceId, file, this.caller);
        if (entry.type === 'directory') return void s.status(reqId, STATUS_CODE.FAILURE, `${file} is a directory (use rmdir)`);
        await this.files.remove(this.instanceId, [file], this.caller);
        s.status(reqId, STATUS_CODE.OK);
      });
    });
    s.on('RENAME', (reqId: number, from: string, to: string) => {
      if (refuseReadOnly(reqId)) return;
      run(reqId, async () => {
        await this.files.rename(this.instanceId, chrootPath(from), chrootPath(to), this.caller);
        s.status(reqId, STATUS_CODE.OK);
      });
    });
    s.on('EXTENDED', (reqId: number, name: string) => s.status(reqId, STATUS_CODE.OP_UNSUPPORTED, `extension ${name} is not supported`));
    // The client's EOF ends the session: close the channel (OpenSSH waits for that before it exits).
    s.once('end', () => {
      this.closeAll();
      s.end();
    });
    s.once('close', () => this.closeAll());
  }

  /** A session that ends with files still open: their uploads are abandoned (the host removes the temp files). */
  private closeAll(): void {
    for (const h of this.handles.values()) {
      if (h.kind === 'write') h.pass.destroy(new Error(`the SFTP session ended before ${h.path} was closed`));
      if (h.kind === 'read') h.stream?.destroy();
    }
    this.handles.clear();
  }

  private addHandle(h: Handle): Buffer {
    const n = this.nextHandle++;
    this.handles.set(n, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(n, 0);
    return buf;
  }

  private handleOf(reqId: number, handle: Buffer): Handle | undefined {
    const h = handle.length === 4 ? this.handles.get(handle.readUInt32BE(0)) : undefined;
    if (!h) this.sftp.status(reqId, STATUS_CODE.FAILURE, 'unknown or closed handle');
    return h;
  }

  /** Sequential reads share one stream from the host; a jump elsewhere reopens it at that offset. */
  private async serveRead(reqId: number, h: Extract<Handle, { kind: 'read' }>, offset: number, len: number): Promise<void> {
    if (offset >= h.entry.size) return void this.sftp.status(reqId, STATUS_CODE.EOF);
    if (!h.stream || offset !== h.pos) {
      h.stream?.destroy();
      h.stream = (await this.files.read(this.instanceId, h.path, this.caller, offset)).stream;
      h.pos = offset;
    }
    const data = await readUpTo(h.stream, Math.min(len, h.entry.size - offset));
    if (data.length === 0) return void this.sftp.status(reqId, STATUS_CODE.EOF);
    h.pos += data.length;
    this.sftp.data(reqId, data);
  }

  /** In-order data goes to the upload (answered once the upload takes more); a little out-of-order data waits for its gap. */
  private async serveWrite(reqId: number, h: Extract<Handle, { kind: 'write' }>, offset: number, data: Buffer): Promise<void> {
    if (h.failure !== undefined) throw h.failure;
    if (offset < h.expected)
      return void this.sftp.status(
        reqId,
        STATUS_CODE.OP_UNSUPPORTED,
        `rewriting bytes before ${h.expected} of ${h.path} is not supported: files are written whole`,
      );
    if (offset > h.expected) {
      h.pendingBytes += data.length;
      if (h.pendingBytes > MAX_PENDING_WRITE_BYTES) {
        h.pass.destroy(new Error('too much out-of-order data'));
        return void this.sftp.status(reqId, STATUS_CODE.FAILURE, `the client wrote too far ahead in ${h.path}`);
      }
      h.pending.set(offset, data);
      return void this.sftp.status(reqId, STATUS_CODE.OK);
    }
    let more = h.pass.write(data);
    h.expected += data.length;
    for (let next = h.pending.get(h.expected); next !== undefined; next = h.pending.get(h.expected)) {
      h.pending.delete(h.expected);
      h.pendingBytes -= next.length;
      more = h.pass.write(next);
      h.expected += next.length;
    }
    if (!more) await Promise.race([once(h.pass, 'drain'), h.done]);
    if (h.failure !== undefined) throw h.failure;
    this.sftp.status(reqId, STATUS_CODE.OK);
  }
}

/** Starts the SFTP server; see the module comment. */
export async function startSftpServer(o: SftpServerOptions): Promise<SftpListener> {
  const { key, generated } = await loadHostKey(o.dataDir);
  if (generated) o.logger.info({ file: path.join(o.dataDir, SFTP_HOST_KEY_FILE) }, 'generated the SFTP host key');
  const recheckMs = o.recheckMs ?? SFTP_TOKEN_RECHECK_MS;
  const clients = new Set<Connection>();
  const timers = new Set<NodeJS.Timeout>();
  /** Open sessions by token id: a revocation on this replica closes them at once. */
  const byToken = new Map<string, Set<() => void>>();
  const unsubscribe = o.tokens.onRevoked((tokenId) => {
    for (const end of byToken.get(tokenId) ?? []) end();
  });
  const audit = async (entry: Omit<AuditEvent, 'id' | 'at' | 'action' | 'targetKind'>) => {
    try {
      await o.audit.append({ at: o.clock.now(), action: 'sftp.login', targetKind: 'instance', ...entry });
    } catch (err) {
      o.logger.error({ err, action: 'sftp.login' }, 'could not write the audit entry');
    }
  };
  const server = new Server({ hostKeys: [key] }, (client, info) => {
    clients.add(client);
    let login: { instanceId: string; writable: boolean; caller: FileCaller; tokenId: string } | undefined;
    const sessionId = `sftp-${Math.random().toString(36).slice(2, 10)}`;
    const remoteAddress = info.ip;
    let revoked = false;
    let checkedAt = 0;
    let checking: Promise<void> | undefined;
    const endRevoked = () => {
      if (revoked) return;
      revoked = true;
      o.logger.info({ sessionId, instanceId: login?.instanceId, actor: login?.caller.actor }, 'SFTP session closed: its token was revoked');
      client.end();
    };
    /** The session's token is still active (checked at most once per TOKEN_CHECK_TTL_MS); UNAUTHORIZED otherwise. */
    const tokenGuard = async (): Promise<void> => {
      if (!login) throw new AppError('UNAUTHORIZED', 'not logged in');
      if (!revoked && o.clock.now() - checkedAt >= TOKEN_CHECK_TTL_MS) {
        const tokenId = login.tokenId;
        checking ??= o.tokens
          .isActive(tokenId)
          .then((active) => {
            checkedAt = o.clock.now();
            if (!active) endRevoked();
          })
          .finally(() => (checking = undefined));
        await checking;
      }
      if (revoked) throw new AppError('UNAUTHORIZED', `token ${login.caller.actor} was revoked: this SFTP session is closed`);
    };
    client.on('authentication', (ctx: AuthContext) => {
      // `none` and key attempts are the client probing for methods: refused, not audited.
      if (ctx.method !== 'password') return ctx.reject(['password']);
      const dot = ctx.username.lastIndexOf('.');
      const tokenName = dot > 0 ? ctx.username.slice(0, dot) : '';
      const instanceRef = dot > 0 ? ctx.username.slice(dot + 1) : '';
      void (async () => {
        const principal = tokenName && instanceRef ? await o.tokens.authenticate(ctx.password) : undefined;
        const refuse = async (why: string, errorCode: string, actor: string, targetId: string | null) => {
          o.logger.info({ user: ctx.username, why, remoteAddress }, 'SFTP login refused');
          await audit({
            actor,
            targetId,
            params: { user: ctx.username, remoteAddress, via: 'sftp', reason: why },
            result: 'error',
            errorCode,
            requestId: sessionId,
          });
          ctx.reject(['password']);
        };
        if (!principal || principal.kind !== 'token' || principal.name !== tokenName || principal.tokenId === null)
          return refuse('unknown user or wrong token', 'UNAUTHORIZED', 'anonymous', null);
        const writable = hasScope(principal.scopes, FILES_WRITE);
        if (!writable && !hasScope(principal.scopes, FILES_READ))
          return refuse('the token has no files scope (files:read or files:write)', 'FORBIDDEN', principal.name, null);
        const instance = await o.files.instance(instanceRef).catch(() => undefined);
        if (!instance) return refuse(`no instance ${instanceRef}`, 'INSTANCE_NOT_FOUND', principal.name, null);
        login = {
          instanceId: instance.id,
          writable,
          caller: { actor: principal.name, via: 'sftp', requestId: sessionId },
          tokenId: principal.tokenId,
        };
        checkedAt = o.clock.now();
        const tokenId = login.tokenId;
        const ends = byToken.get(tokenId) ?? new Set<() => void>();
        byToken.set(tokenId, ends.add(endRevoked));
        client.once('close', () => {
          ends.delete(endRevoked);
          if (ends.size === 0 && byToken.get(tokenId) === ends) byToken.delete(tokenId);
        });
        o.logger.info({ user: ctx.username, instanceId: instance.id, writable, sessionId, remoteAddress }, 'SFTP login');
        await audit({
          actor: principal.name,
          targetId: instance.id,
          params: { user: ctx.username, remoteAddress, via: 'sftp', access: writable ? 'read-write' : 'read-only' },
          result: 'ok',
          errorCode: null,
          requestId: sessionId,
        });
        ctx.accept();
      })().catch((err: unknown) => {
        o.logger.warn({ err, user: ctx.username }, 'SFTP login failed');
        ctx.reject(['password']);
      });
    });
    client.on('ready', () => {
      // An idle session learns of a revocation too, within recheckMs.
      const timer = setInterval(() => void tokenGuard().catch(() => undefined), recheckMs);
      timer.unref();
      timers.add(timer);
      client.once('close', () => {
        clearInterval(timer);
        timers.delete(timer);
      });
      client.on('session', (accept) => {
        const session = accept();
        session.on('sftp', (acceptSftp) => {
          if (!login || revoked) return;
          new SftpSession(acceptSftp(), o.files, login.instanceId, login.writable, login.caller, tokenGuard).attach();
        });
      });
    });
    client.on('error', (err) => o.logger.debug({ err: err.message }, 'SFTP connection error'));
    client.on('close', () => clients.delete(client));
  });
  server.listen(o.port, o.host);
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : o.port;
  return {
    host: o.host,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      unsubscribe();
      for (const t of timers) clearInterval(t);
      for (const c of clients) c.end();
      await closed;
    },
  };
}
