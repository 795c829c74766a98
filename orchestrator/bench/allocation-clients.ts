// The allocation benchmark's HTTP clients in a process of their own (bench:fleet
// part (a), bench:scale's allocation phase): the server process then spends its
// CPU on serving only, as it would with its clients on other machines, and its
// CPU per cycle is measured alone. The clients are test/support/fleet-buffer.ts'
// runAllocationLoad (real sockets, fetch), or an open-loop load at a fixed rate
// (latency at an offered rate, not at saturation). Protocol over the IPC channel: the
// child warms up, says "warm", waits for "go", runs the measured load, and
// sends its LoadResult.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runAllocationLoad, type AllocationBody, type LoadResult } from '../test/support/fleet-buffer.js';
import { jsonClient } from '../test/support/json-client.js';

export interface ClientLoad {
  baseUrl: string;
  token: string;
  groupId: string;
  /** Closed loop: this many clients, each allocating again as soon as it released. */
  clients: number;
  total: number;
  /** Allocations made first, not measured (connections, code paths, statement caches). */
  warmup: number;
  /**
   * Open loop instead: allocations start at this rate (per second) whatever
   * the answers, each released as soon as it is answered; at most `clients`
   * are in flight (a start that finds them all busy waits and counts as late).
   */
  ratePerSecond?: number;
}

export interface PacedResult extends LoadResult {
  /** Starts that found every client busy and went out late. */
  late: number;
}

/** What the child answers: the load's result and the client process's own CPU per allocation (it shares the machine with the server). */
export interface ClientResult extends PacedResult {
  clientCpuMsPerAllocation: number;
}

/** Open-loop load (ClientLoad.ratePerSecond): latency at a given offered rate, not at saturation. */
async function runPacedAllocationLoad(load: ClientLoad & { ratePerSecond: number }): Promise<PacedResult> {
  const answers: LoadResult['answers'] = [];
  const http = jsonClient(load.baseUrl, { token: load.token, maxSockets: load.clients });
  const interval = 1000 / load.ratePerSecond;
  let inFlight = 0;
  let late = 0;
  let failure: Error | undefined;
  const one = async (): Promise<void> => {
    inFlight++;
    try {
      const t = performance.now();
      const res = await http.call<AllocationBody>('POST', `/api/v1/groups/${load.groupId}/allocations`, { body: {} });
      const body = res.body;
      answers.push({
        status: res.status,
        code: body.error?.code ?? null,
        instanceId: body.instanceId ?? null,
        allocationId: body.allocationId ?? null,
        latencyMs: performance.now() - t,
      });
      if (res.status === 201) {
        const rel = await http.call('DELETE', `/api/v1/allocations/${body.allocationId}`);
        if (rel.status !== 200) failure ??= new Error(`release of ${body.allocationId} answered ${rel.status}`);
      } else if (!(res.status === 409 && body.error?.code === 'CAPACITY_EXHAUSTED'))
        failure ??= new Error(`allocation answered ${res.status} ${body.error?.code}`);
    } finally {
      inFlight--;
    }
  };
  const running: Promise<void>[] = [];
  const t0 = performance.now();
  for (let n = 0; n < load.total && !failure; n++) {
    const due = t0 + n * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (inFlight >= load.clients) {
      late++;
      while (inFlight >= load.clients) await new Promise((r) => setTimeout(r, 1));
    }
    running.push(one());
  }
  try {
    await Promise.all(running);
  } finally {
    http.close();
  }
  if (failure) throw failure;
  return { answers, overlaps: [], elapsedMs: performance.now() - t0, late };
}

/**
 * Runs the load in a child process; `onWarm` runs after the warm-up, right
 * before the measured load starts (e.g. to start measuring the server's CPU).
 */
export function allocationLoadInChild(load: ClientLoad, onWarm: () => void): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [JSON.stringify(load)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: ClientResult | undefined;
    child.on('message', (m: { kind: 'warm' } | { kind: 'result'; result: ClientResult } | { kind: 'error'; message: string }) => {
      if (m.kind === 'warm') {
        onWarm();
        child.send('go');
      } else if (m.kind === 'result') result = m.result;
      else reject(new Error(`allocation clients: ${m.message}`));
    });
    child.on('error', reject);
    child.on('exit', (code) => (result ? resolve(result) : reject(new Error(`allocation clients exited with ${code} before answering`))));
  });
}

async function childMain(load: ClientLoad): Promise<void> {
  const send = (m: unknown) => new Promise<void>((r) => process.send!(m, () => r()));
  try {
    const base = { baseUrl: load.baseUrl, token: load.token, groupId: load.groupId, clients: load.clients };
    if (load.warmup > 0) await runAllocationLoad({ ...base, total: load.warmup });
    const go = new Promise<void>((r) => process.once('message', () => r()));
    await send({ kind: 'warm' });
    await go;
    const cpu = process.cpuUsage();
    const run =
      load.ratePerSecond === undefined
        ? { ...(await runAllocationLoad({ ...base, total: load.total })), late: 0 }
        : await runPacedAllocationLoad({ ...load, ratePerSecond: load.ratePerSecond });
    const used = process.cpuUsage(cpu);
    const result: ClientResult = { ...run, clientCpuMsPerAllocation: (used.user + used.system) / 1000 / Math.max(1, load.total) };
    await send({ kind: 'result', result });
  } catch (err) {
    await send({ kind: 'error', message: (err as Error).message });
  }
  process.disconnect();
}

if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) void childMain(JSON.parse(process.argv[2]!) as ClientLoad);
