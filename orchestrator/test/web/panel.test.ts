// The web panel in a real browser: playwright-core driving Debian's chromium
// against a real orchestrator (serving web/dist) and agent with the
// Minecraft-protocol test server (test/support/fleet-stack.ts). One stack and
// one browser for the file; the tests run in order and share the instance they
// create. Each saves a screenshot under test-output/panel/ (docs/panel.md).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleetStack, testServerTemplate, until, type FleetStack, type Loose } from '../support/fleet-stack.js';

const ORCHESTRATOR_DIR = fileURLToPath(new URL('../..', import.meta.url));
const WEB_DIST = join(ORCHESTRATOR_DIR, '..', 'web', 'dist');
const SHOTS = join(ORCHESTRATOR_DIR, 'test-output', 'panel');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const NAME = 'survival-1';
const READ_ONLY_NAME = 'lobby-ro';
/** Its install script waits for this file in the instance directory: the test decides when installing ends. */
const INSTALL_GATE = '.install-go';
const SLOW_NAME = 'slow-install';

let stack: FleetStack;
let context: BrowserContext;
let page: Page;
let profile: string;
/** Created on the Tokens page (the test before the read-only one). */
let readToken: string;
let instanceId: string;
let readOnlyInstanceId: string;
let slowInstanceId: string;
let evil: Server | undefined;
const pageErrors: string[] = [];
const eventStreams: string[] = [];
/**
 * Console errors and every answer ≥ 400 from the panel's origin: a normal
 * session leaves this empty; the steps that provoke an error on purpose (a
 * wrong token, a refused backup) empty it after checking their message.
 */
const consoleErrors: string[] = [];
/** Every log request the page made (path and query). */
const logRequests: string[] = [];

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const button = (name: string) => page.getByRole('button', { name, exact: true });
/** The power buttons the instance page draws, in order. */
const powerButtons = async () => (await page.getByRole('group', { name: 'Lifecycle actions' }).getByRole('button').allTextContents()).map((t) => t.trim());
const expectPowerButtons = (names: string[]) => expect.poll(powerButtons, { timeout: 20_000 }).toEqual(names);
/** Waits until the element with this data-testid shows exactly `text` (the panel updates it from the event stream). */
const waitText = (testId: string, text: string, timeout = 60_000) =>
  page.getByTestId(testId).filter({ hasText: new RegExp(`^${text}$`) }).waitFor({ timeout });

/** Signs in; `inPlace`: on the login form the page shows now (after a sign-out), keeping its URL. */
async function login(token: string, inPlace = false): Promise<void> {
  if (!inPlace) await page.goto(stack.url);
  await page.getByLabel('API token').fill(token);
  await button('Sign in').click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: 15_000 });
}

async function openInstance(id: string): Promise<void> {
  await page.goto(`${stack.url}/#/instances/${id}`);
  await page.getByTestId('instance-state').waitFor({ timeout: 15_000 });
}

beforeAll(async () => {
  // `npm ci` builds the panel (prepare); a checkout without it builds here once.
  if (!existsSync(join(WEB_DIST, 'index.html'))) execFileSync('npm', ['run', 'build:web'], { cwd: ORCHESTRATOR_DIR, stdio: 'ignore' });
  mkdirSync(SHOTS, { recursive: true });
  stack = await startFleetStack('panel', { env: { ENDERCLOUD_WEB_DIR: WEB_DIST } });
  await stack.must('PUT', '/groups/survival', { kind: 'persistent', variants: [{ id: 'main', template: { name: stack.template, version: '1' } }] });
  // An instance the read-only token looks at (never started: no container work).
  readOnlyInstanceId = (await stack.must('POST', '/instances', { groupId: 'survival', variantId: 'main', name: READ_ONLY_NAME, start: false })).id as string;
  await stack.waitState(readOnlyInstanceId, 'stopped', 60_000);
  // Version 2: an install script that waits for the test's signal, and an operator-only variable.
  const image = (await stack.must('GET', `/templates/${stack.template}/versions/1`)).image as string;
  await stack.must('PUT', `/templates/${stack.template}/versions/2`, testServerTemplate(image, {
    install: { image, entrypoint: 'ash', timeoutMs: 180_000, script: `echo preparing the world\nwhile [ ! -f /mnt/server/${INSTALL_GATE} ]; do sleep 1; done\necho install done\n` },
    variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }, { name: 'LEVEL_SEED', type: 'string', default: 'seed-1', operatorOnly: true }],
  }));
  await stack.must('PUT', '/groups/slow', { kind: 'persistent', variants: [{ id: 'main', template: { name: stack.template, version: '2' } }] });
  profile = mkdtempSync(join(tmpdir(), 'ec-panel-chromium-'));
  // Our flags exactly; headless: false so that Playwright adds no headless switch of its own (--headless is ours).
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: false, args: CHROMIUM_FLAGS, viewport: { width: 1280, height: 800 }, timeout: 60_000,
  });
  page = context.pages()[0] ?? await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (err) => pageErrors.push(err.message));
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname === '/api/v1/events') eventStreams.push(r.url());
    if (url.pathname.endsWith('/logs')) logRequests.push(`${url.pathname}${url.search}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && r.url().startsWith(stack.url)) consoleErrors.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
}, 300_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  if (evil) await new Promise((r) => evil!.close(r));
  await stack?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe.sequential('web panel in Chromium', { timeout: 180_000 }, () => {
  it('serves the panel at / with its CSP and cache headers; the API stays under /api/v1', async () => {
    const index = await fetch(`${stack.url}/instances/anything`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    expect((await fetch(`${stack.url}${asset!}`)).headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const api404 = await fetch(`${stack.url}/api/v1/no-such-route`);
    expect(api404.status).toBe(404);
    expect(((await api404.json()) as Loose).error.code).toBe('NOT_FOUND');
  });

  it('logs in with a token: an HttpOnly SameSite=Strict session cookie, not the token, is kept', async () => {
    const firstSession = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/session');
    await page.goto(stack.url);
    await page.getByRole('heading', { name: 'EnderCloud' }).waitFor();
    // The first load asks "signed in?" and gets an answer, not a 401; the icon is served.
    const session = await firstSession;
    expect(session.status()).toBe(200);
    expect(await session.json()).toEqual({ authenticated: false });
    expect(await page.evaluate(async () => {
      const href = document.querySelector<HTMLLinkElement>('link[rel="icon"]')?.getAttribute('href');
      return href ? { href, status: (await fetch(href)).status } : null;
    })).toEqual({ href: '/favicon.svg', status: 200 });
    expect(consoleErrors).toEqual([]);
    await page.getByLabel('API token').fill('ect_wrong');
    await button('Sign in').click();
    await page.getByRole('alert').filter({ hasText: 'unknown or revoked token' }).waitFor();
    consoleErrors.length = 0; // the wrong token's 401 was the point
    await login(stack.adminToken);
    const cookies = await context.cookies(stack.url);
    expect(cookies).toEqual([expect.objectContaining({ name: 'endercloud_session', httpOnly: true, sameSite: 'Strict', path: '/' })]);
    expect(cookies[0]!.value).not.toContain(stack.adminToken);
    expect(await page.evaluate(() => JSON.stringify(localStorage) + document.cookie)).not.toContain(stack.adminToken);
    await page.getByText('Live', { exact: true }).waitFor();
    await shot('01-overview');
  });

  it('creates an instance from a template after its preview', async () => {
    await page.getByRole('link', { name: 'Instances', exact: true }).click();
    await page.getByLabel('Group').selectOption('survival');
    await page.getByLabel('Name (optional)').fill(NAME);
    await expect(button('Create').count()).resolves.toBe(0);
    await button('Preview').click();
    const preview = page.getByLabel('Deployment preview');
    await preview.waitFor();
    expect(await preview.textContent()).toContain(stack.template);
    await shot('02-create-preview');
    await button('Create').click();
    await page.waitForURL(/#\/instances\/i-/);
    instanceId = decodeURIComponent(page.url().split('#/instances/')[1]!);
    expect((await stack.get(instanceId)).name).toBe(NAME);
  });

  it('watches it go online live (one event stream, no reload)', async () => {
    const streamsBefore = eventStreams.length;
    await waitText('instance-state', 'online', 90_000);
    expect(eventStreams.length).toBe(streamsBefore);
    expect(eventStreams.length).toBeGreaterThanOrEqual(1);
    expect((await stack.get(instanceId)).state).toBe('online');
    // The history timeline followed along.
    await page.getByLabel('State history, newest first').getByText('online').first().waitFor();
    // Online: the buttons the API offers (`actions`), no Start and no Resume.
    await expectPowerButtons(['Stop', 'Restart', 'Pause']);
    await shot('03-online');
  });

  it('while installing: says so, asks for no log, offers no power action; then shows the install output', async () => {
    const requestsBefore = logRequests.length;
    slowInstanceId = (await stack.must('POST', '/instances', { groupId: 'slow', variantId: 'main', name: SLOW_NAME, start: false })).id as string;
    await openInstance(slowInstanceId);
    await waitText('instance-state', 'installing');
    await page.getByTestId('log-status').filter({ hasText: 'Installing…' }).waitFor();
    await page.getByTestId('no-actions').filter({ hasText: /installing|create in progress/ }).waitFor();
    expect(await powerButtons()).toEqual([]);
    await shot('03b-installing');
    expect(logRequests.slice(requestsBefore).filter((r) => r.includes(slowInstanceId))).toEqual([]);
    writeFileSync(join(stack.runtimeDir(slowInstanceId), INSTALL_GATE), 'go\n');
    await waitText('instance-state', 'stopped', 90_000);
    await page.getByTestId('install-output').filter({ hasText: /preparing the world\s+install done/ }).waitFor();
    await expectPowerButtons(['Start', 'Restart']);
    const text = await page.locator('main').innerText();
    expect(text).not.toMatch(/https?:\/\/|refused GET|has no container/);
    await shot('03c-installed');
    await openInstance(instanceId);
  });

  it('runs a console command over RCON', async () => {
    await page.getByLabel('Console command').fill('list');
    await button('Send').click();
    await page.getByTestId('console-output').getByText(/players online/).waitFor();
    // The log pane shows what the API answers for the container's log.
    const log = await (await fetch(`${stack.url}/api/v1/instances/${instanceId}/logs?tail=200`, { headers: { authorization: `Bearer ${stack.adminToken}` } })).text();
    const first = log.split('\n').find((l) => l.trim() !== '');
    if (first !== undefined) await page.getByTestId('log').filter({ hasText: first.trim() }).waitFor();
    await shot('04-console');
  });

  it('pauses and wakes (resume) the instance', async () => {
    await button('Pause').click();
    await waitText('instance-state', 'paused');
    await expectPowerButtons(['Stop', 'Resume']);
    await button('Resume').click();
    await waitText('instance-state', 'online');
    await expectPowerButtons(['Stop', 'Restart', 'Pause']);
    await shot('05-resumed');
  });

  it('takes a backup and restores it with a typed confirmation', async () => {
    // Seed 002: a manual backup that would stop a running server needs the explicit choice.
    await button('Take backup').click();
    await page.getByRole('alert').filter({ hasText: /stop/ }).waitFor();
    consoleErrors.length = 0; // the refusal (which says to choose the stop) was the point
    await page.getByLabel('stop the server if it cannot be saved online').check();
    await button('Take backup').click();
    const row = page.locator('tr[data-backup]');
    await row.first().waitFor({ timeout: 60_000 });
    await waitText('instance-state', 'online');
    const backupId = (await row.first().getAttribute('data-backup'))!;
    expect(await row.first().getByRole('link', { name: 'Download' }).getAttribute('href')).toBe(`/api/v1/instances/${instanceId}/backups/${backupId}/download`);
    await waitText('active-action', 'none');
    await button('Stop').click();
    await waitText('instance-state', 'stopped');
    await waitText('active-action', 'none');
    await expectPowerButtons(['Start', 'Restart']);
    await row.first().getByRole('button', { name: 'Restore' }).click();
    const dialog = page.getByRole('dialog');
    const confirm = dialog.getByRole('button', { name: 'Restore', exact: true });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(`Type ${NAME} to confirm`).fill('survival');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(`Type ${NAME} to confirm`).fill(NAME);
    await shot('06-restore-confirm');
    await confirm.click();
    await dialog.waitFor({ state: 'hidden' });
    await until('restore command succeeded', async () => (await stack.commands(instanceId)).some((c) => c.kind === 'restore' && c.status === 'succeeded'), 60_000, 200);
    await shot('07-restored');
  });

  it('deletes with scopes: player data needs the typed name', async () => {
    await page.getByRole('checkbox', { name: /Player data/ }).check();
    await button(`Delete ${NAME}…`).click();
    const dialog = page.getByRole('dialog');
    const confirm = dialog.getByRole('button', { name: 'Delete', exact: true });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(`Type ${NAME} to confirm`).fill(NAME);
    await shot('08-delete-confirm');
    await confirm.click();
    await page.waitForURL(/#\/instances$/);
    await stack.waitGone(instanceId, 60_000);
    await page.locator(`tr[data-instance="${NAME}"]`).waitFor({ state: 'detached' });
    await shot('09-deleted');
  });

  it('puts a host in maintenance with a message and ends it; the audit log lists what was done', async () => {
    await page.getByRole('link', { name: 'Hosts' }).click();
    await page.getByLabel(`Maintenance message for ${stack.hostId}`).fill('disk swap');
    await button('Start maintenance').click();
    await button('End maintenance').waitFor();
    expect((await stack.api('GET', `/hosts/${stack.hostId}`)).body).toMatchObject({ status: 'MAINTENANCE', maintenance: { enabled: true, message: 'disk swap' } });
    await shot('10-host-maintenance');
    await button('End maintenance').click();
    await button('Start maintenance').waitFor();
    await until('host back ONLINE', async () => (await stack.api('GET', `/hosts/${stack.hostId}`)).body.status === 'ONLINE', 20_000, 100);
    await page.getByRole('link', { name: 'Audit log' }).click();
    for (const action of ['host.maintenance', 'instance.delete', 'instance.restore', 'instance.backup', 'instance.console', 'instance.create']) {
      await page.getByRole('rowheader', { name: action, exact: true }).first().waitFor();
    }
    await shot('11-audit');
  });

  it('hosts: memory reserved / total from the host view, and a heartbeat age that ticks between events', async () => {
    await page.getByRole('link', { name: 'Hosts' }).click();
    const host = (await stack.api('GET', `/hosts/${stack.hostId}`)).body;
    const total = host.resources.memoryMb as number;
    const mib = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : `${n} MiB`);
    await page.getByTestId(`memory-${stack.hostId}`).filter({ hasText: new RegExp(`^\\d+ (MiB|GiB) / ${mib(total).replace('.', '\\.')}$`) }).waitFor();
    // Heartbeats come every 500 ms and send no change event: a fetched age is 0-1 s, so 3 s or more is the clock ticking.
    await page.getByTestId(`heartbeat-${stack.hostId}`).filter({ hasText: /^([3-9]|\d\d+) s ago$/ }).waitFor({ timeout: 20_000 });
    await shot('11b-hosts');
  });

  it('fleets: the class reads once, archived rows show no players and no Despawn', async () => {
    await stack.putGroup('arch', { savegame: { mode: 'archive' } }, { idleTiers: [{ after: '2s', action: 'stop' }, { after: '3s', action: 'archive' }] });
    const spawned = (await stack.must('POST', '/groups/arch/spawn', { name: `${stack.run}-arch` })).id as string;
    await stack.waitState(spawned, 'online', 60_000);
    const allocation = await stack.must('POST', '/groups/arch/allocations', {});
    await page.getByRole('link', { name: 'Groups & fleets' }).click();
    const row = page.locator(`tr[data-fleet-instance="${stack.run}-arch"]`);
    await row.getByTestId('fleet-class').filter({ hasText: /^allocated$/ }).waitFor();
    expect(await row.getByRole('button', { name: 'Despawn' }).count()).toBe(1);
    await shot('11c-fleet-allocated');
    await stack.must('DELETE', `/allocations/${String(allocation.allocationId)}`);
    await stack.waitState(spawned, 'archived', 60_000);
    await row.getByTestId('fleet-class').filter({ hasText: /^archived$/ }).waitFor();
    expect(await row.getByRole('button', { name: 'Despawn' }).count()).toBe(0);
    expect(await row.getByRole('cell').nth(2).innerText()).toBe('–');
    await shot('11d-fleet-archived');
  });

  it('creates a token with scopes (its secret shown once) and revokes another', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    const create = async (name: string, scopes: string[]) => {
      await page.getByLabel('Name', { exact: true }).fill(name);
      for (const box of await page.getByRole('group', { name: 'Scopes' }).getByRole('checkbox').all()) await box.uncheck();
      for (const scope of scopes) await page.getByRole('checkbox', { name: scope, exact: true }).check();
      await button('Create token').click();
      const secret = await page.getByTestId('token-secret').inputValue();
      await button('Done').click();
      await page.getByTestId('token-secret').waitFor({ state: 'detached' });
      return secret;
    };
    readToken = await create(`${stack.run}-viewer`, ['read']);
    expect(readToken).toMatch(/^ect_/);
    const throwaway = await create(`${stack.run}-throwaway`, ['instances:read', 'hosts:read']);
    const listed = ((await stack.api('GET', '/tokens')).body.tokens as Loose[]).find((t) => t.name === `${stack.run}-throwaway`)!;
    expect(listed.scopes).toEqual(['instances:read', 'hosts:read']);
    expect(JSON.stringify(await stack.api('GET', '/tokens'))).not.toContain(throwaway);
    await button(`Revoke ${stack.run}-throwaway`).click();
    await page.getByRole('row', { name: new RegExp(`${stack.run}-throwaway`) }).getByText(/^revoked/).waitFor();
    expect((await fetch(`${stack.url}/api/v1/instances`, { headers: { authorization: `Bearer ${throwaway}` } })).status).toBe(401);
    await shot('12-tokens');
  });

  it('a normal session left no console error and no failed request (first load, install, log, actions, every page)', () => {
    expect(consoleErrors).toEqual([]);
  });

  it('refuses a cross-site form post that carries the session cookie (CSRF)', async () => {
    // Another port on the same host is the same *site*: SameSite=Strict sends the cookie; the CSRF check must refuse.
    evil = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<form id="f" method="POST" action="${stack.url}/api/v1/instances/${readOnlyInstanceId}/start" enctype="text/plain"><input name="x" value="1"></form><script>document.getElementById('f').submit()</script>`,
    ));
    await new Promise<void>((r) => evil!.listen(0, '127.0.0.1', r));
    const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
    const answered = page.waitForResponse((r) => r.url().endsWith(`/instances/${readOnlyInstanceId}/start`));
    await page.goto(evilUrl);
    const response = await answered;
    expect(response.status()).toBe(403);
    expect((await response.request().allHeaders()).cookie ?? '').toContain('endercloud_session=');
    expect(await response.text()).toContain('x-endercloud-csrf');
    await shot('13-csrf-refused');
    expect((await stack.get(readOnlyInstanceId)).desiredState).toBe('stopped');
    expect((await stack.commands(readOnlyInstanceId)).some((c) => c.kind === 'start')).toBe(false);
    // The same request with the header but a foreign Origin is refused too.
    const cookie = (await context.cookies(stack.url))[0]!;
    const foreign = await fetch(`${stack.url}/api/v1/instances/${readOnlyInstanceId}/start`, {
      method: 'POST', headers: { cookie: `${cookie.name}=${cookie.value}`, 'x-endercloud-csrf': '1', origin: evilUrl.slice(0, -1) },
    });
    expect(foreign.status).toBe(403);
  });

  it('logs out: the session ends on the server and the cookie is cleared', async () => {
    // Signed out on an admin page: the next person to sign in must not land there.
    await page.goto(`${stack.url}/#/tokens`);
    await page.getByRole('heading', { name: 'Tokens', level: 1 }).waitFor();
    const cookie = (await context.cookies(stack.url))[0]!;
    await button('Sign out').click();
    await page.getByLabel('API token').waitFor();
    expect(new URL(page.url()).hash).toBe('#/overview');
    expect(await context.cookies(stack.url)).toEqual([]);
    const replay = await fetch(`${stack.url}/api/v1/session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    expect(replay.status).toBe(401);
    await shot('14-logged-out');
  });

  it('a read-only token lands on the overview, sees no action buttons, and the API refuses a mutation anyway', async () => {
    await login(readToken, true);
    expect(new URL(page.url()).hash).toBe('#/overview');
    expect(await page.getByRole('link', { name: 'Tokens' }).count()).toBe(0);
    // An admin page asked for by URL lands on the overview too: no token form.
    for (const hash of ['#/tokens', '#/audit']) {
      await page.goto(`${stack.url}/${hash}`);
      await page.waitForURL(/#\/overview$/);
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      expect(await button('Create token').count()).toBe(0);
      expect(await page.getByRole('textbox').count()).toBe(0);
    }
    await page.getByRole('link', { name: 'Instances', exact: true }).click();
    await page.locator(`tr[data-instance="${READ_ONLY_NAME}"]`).waitFor();
    expect(await page.getByRole('heading', { name: 'Create an instance' }).count()).toBe(0);
    await openInstance(readOnlyInstanceId);
    await page.getByRole('heading', { name: 'Backups' }).waitFor();
    for (const name of ['Start', 'Stop', 'Restart', 'Pause', 'Resume', 'Take backup', 'Send', 'Change', `Delete ${READ_ONLY_NAME}…`]) {
      expect(await button(name).count(), name).toBe(0);
    }
    await page.getByRole('link', { name: 'Hosts' }).click();
    await page.getByRole('heading', { name: 'Hosts', level: 1 }).waitFor();
    expect(await page.getByRole('button', { name: /maintenance/ }).count()).toBe(0);
    const refused = await page.evaluate(async (id) => {
      const r = await fetch(`/api/v1/instances/${id}/start`, { method: 'POST', headers: { 'x-endercloud-csrf': '1' } });
      return { status: r.status, body: await r.text() };
    }, readOnlyInstanceId);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('lacks scope instances:write');
    await openInstance(readOnlyInstanceId);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot('15-read-only-phone-dark');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: 'light' });
    await shot('16-read-only-desktop');
    await button('Sign out').click();
    await page.getByLabel('API token').waitFor();
  });

  it('a forbidden action (403) says "Not allowed", in words', async () => {
    const writer = (await stack.must('POST', '/tokens', { name: `${stack.run}-writer`, scopes: ['read', 'instances:write'] })).secret as string;
    await login(writer);
    await openInstance(slowInstanceId);
    await expectPowerButtons(['Start', 'Restart']);
    // LEVEL_SEED is operator-only: an instances:write token may not set it.
    await page.getByLabel('Variable').fill('LEVEL_SEED');
    await page.getByLabel('Value', { exact: true }).fill('other-seed');
    const refused = page.waitForResponse((r) => r.url().endsWith(`/instances/${slowInstanceId}/settings`));
    await button('Change').click();
    expect((await refused).status()).toBe(403);
    const alert = page.getByRole('alert').filter({ hasText: /^Not allowed: / });
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/^Not allowed: .*LEVEL_SEED.*operator-only/);
    expect(await alert.getAttribute('data-code')).toBe('FORBIDDEN');
    await shot('17-not-allowed');
    await button('Sign out').click();
    await page.getByLabel('API token').waitFor();
    expect(pageErrors).toEqual([]);
  });
});
