// ENDERCLOUD_PUBLIC_URL is what users and agents are told; unset, it is the
// address actually listened on — also when ENDERCLOUD_LISTEN asks for port 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';

const running: Orchestrator[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((o) => o.stop()));
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

async function start(env: Record<string, string>): Promise<Orchestrator> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ec-public-url-'));
  dirs.push(dataDir);
  const o = await startOrchestrator(orchestratorConfig({ ENDERCLOUD_DATA_DIR: dataDir, ENDERCLOUD_LISTEN: '127.0.0.1:0', ...env }), {
    logger: pino({ level: 'silent' }),
    runWorker: false,
    runOfflineDetector: false,
    runSupervisor: false,
  });
  running.push(o);
  return o;
}

describe('public URL', () => {
  it('is the real listening address when ENDERCLOUD_PUBLIC_URL is unset, even on port 0', async () => {
    const o = await start({});
    expect(o.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(o.url).not.toMatch(/:0$/);
    expect(o.publicUrl).toBe(o.url);
  });

  it('is ENDERCLOUD_PUBLIC_URL when set (trailing slash dropped)', async () => {
    const o = await start({ ENDERCLOUD_PUBLIC_URL: 'https://cloud.example.net/' });
    expect(o.publicUrl).toBe('https://cloud.example.net');
    expect(o.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});
