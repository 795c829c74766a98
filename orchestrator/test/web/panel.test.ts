// The web panel in a real browser: playwright-core driving Debian's chromium
// against a real orchestrator (serving web/dist) and agent with the
// Minecraft-protocol test server (test/support/fleet-stack.ts). One stack and
// one browser for the file; the tests run in order and share the instance they
// create. Each saves a screenshot under test-output/panel/ (docs/panel.md).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AxeResults } from 'axe-core';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker } from '../support/docker.js';
import { startFleetStack, testServerTemplate, until, type FleetStack, type Loose } from '../support/fleet-stack.js';

const ORCHESTRATOR_DIR = fileURLToPath(new URL('../..', import.meta.url));
const WEB_DIST = join(ORCHESTRATOR_DIR, '..', 'web', 'dist');
const SHOTS = join(ORCHESTRATOR_DIR, 'test-output', 'panel');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** An image choice the v2 template offers besides its own (never pulled: choosing it only shows the update plan). */
const OTHER_IMAGE = '127.0.0.1:5000/endercloud-panel-test/other:1';
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const NAME = 'survival-1';
const READ_ONLY_NAME = 'lobby-ro';
/** Its install script waits for this file in the instance directory: the test decides when installing ends. */
const INSTALL_GATE = '.install-go';
const SLOW_NAME = 'slow-install';
/** A second tag of the test server's image: updating to it replaces the container (removed after the file). */
const NEXT_REPO = 'endercloud-panel-test/mc-server-next';
const nextTag = `t${process.pid}-${Date.now()}`;

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
/** Views axe-core checked, with their serious/critical violations (all must be empty). */
const axeResults: { view: string; violations: string[] }[] = [];

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const button = (name: string) => page.getByRole('button', { name, exact: true });
/** The power buttons the instance page draws, in order. */
const powerButtons = async () =>
  (await page.getByRole('group', { name: 'Lifecycle actions' }).getByRole('button').allTextContents()).map((t) => t.trim());
const expectPowerButtons = (names: string[]) => expect.poll(powerButtons, { timeout: 20_000 }).toEqual(names);
/** Waits until the element with this data-testid shows exactly `text` (the panel updates it from the event stream). */
const waitText = (testId: string, text: string, timeout = 60_000) =>
  page
    .getByTestId(testId)
    .filter({ hasText: new RegExp(`^${text}$`) })
    .waitFor({ timeout });

/** Signs in; `inPlace`: on the login form the page shows now (after a sign-out), keeping its URL. */
async function login(token: string, inPlace = false): Promise<void> {
  if (!inPlace) await page.goto(stack.url);
  await page.getByLabel('API token').fill(token);
  await button('Sign in').click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: 15_000 });
}

async function openInstance(id: string, tab?: string): Promise<void> {
  await page.goto(`${stack.url}/#/instances/${id}${tab ? `/${tab}` : ''}`);
  await page.getByTestId('instance-state').waitFor({ timeout: 15_000 });
}

/** Opens one tab of the server page by its link (the URL follows: #/instances/<id>/<tab>). */
async function openTab(label: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Server sections' }).getByRole('link', { name: label, exact: true }).click();
  await page.locator(`.tab-panel[data-tab="${label.toLowerCase()}"]`).waitFor();
  expect(new URL(page.url()).hash).toMatch(new RegExp(`^#/instances/[^/]+/${label.toLowerCase()}$`));
}

/** axe-core on the page as it is now: no serious or critical violation (recorded per view, asserted by the caller and at the end). */
async function axe(view: string): Promise<string[]> {
  // The panel's CSP (default-src 'self') refuses addScriptTag's inline script: the source is evaluated over the DevTools protocol instead.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(readFileSync(AXE, 'utf8'));
  const violations = await page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, o: object): Promise<AxeResults> } };
    const r = await w.axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id} (${v.impact ?? ''}): ${v.nodes
            .map((n) => n.target.join(' '))
            .slice(0, 5)
            .join(', ')}`,
      );
  });
  axeResults.push({ view, violations });
  return violations;
}
const expectAxeClean = async (view: string) => expect(await axe(view), view).toEqual([]);

/** Nothing on the page is wider than the viewport (the document does not scroll sideways). */
const sideways = () =>
  page.evaluate(() => {
    const viewport = document.documentElement.clientWidth;
    // What sticks out (for the failure message): the innermost elements whose right edge passes the viewport.
    const clipped = (el: Element): boolean => {
      for (let p = el.parentElement; p; p = p.parentElement)
        if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return true;
      return false;
    };
    const out = [...document.querySelectorAll('body *')]
      .filter((el) => !clipped(el))
      .filter(
        (el) =>
          el.getBoundingClientRect().right > viewport + 0.5 &&
          ![...el.children].some((c) => c.getBoundingClientRect().right > viewport + 0.5),
      );
    const culprits = out
      .slice(0, 3)
      .map(
        (el) =>
          `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(' ').join('.')}` : ''} right=${Math.round(el.getBoundingClientRect().right)}`,
      );
    return { scroll: document.documentElement.scrollWidth, viewport, culprits };
  });

beforeAll(async () => {
  // `npm ci` builds the panel (prepare); a checkout without it builds here once.
  if (!existsSync(join(WEB_DIST, 'index.html'))) execFileSync('npm', ['run', 'build:web'], { cwd: ORCHESTRATOR_DIR, stdio: 'ignore' });
  mkdirSync(SHOTS, { recursive: true });
  // Stats every second: the console graphs fill within the test.
  stack = await startFleetStack('panel', { env: { ENDERCLOUD_WEB_DIR: WEB_DIST, ENDERCLOUD_STATS_INTERVAL: '1s' } });
  await stack.must('PUT', '/groups/survival', {
    kind: 'persistent',
    variants: [{ id: 'main', template: { name: stack.template, version: '1' } }],
  });
  // An instance the read-only token looks at (never started: no container work).
  readOnlyInstanceId = (
    await stack.must('POST', '/instances', { groupId: 'survival', variantId: 'main', name: READ_ONLY_NAME, start: false })
  ).id as string;
  await stack.waitState(readOnlyInstanceId, 'stopped', 60_000);
  // Version 2: an install script that waits for the test's signal, and an operator-only variable.
  const image = (await stack.must('GET', `/templates/${stack.template}/versions/1`)).image as string;
  await stack.must(
    'PUT',
    `/templates/${stack.template}/versions/2`,
    testServerTemplate(image, {
      install: {
        image,
        entrypoint: 'ash',
        timeoutMs: 180_000,
        script: `echo preparing the world\nwhile [ ! -f /mnt/server/${INSTALL_GATE} ]; do sleep 1; done\necho install done\n`,
      },
      variables: [
        { name: 'RCON_PASSWORD', type: 'string', secret: true },
        { name: 'LEVEL_SEED', type: 'string', default: 'seed-1', operatorOnly: true },
        {
          name: 'MOTD',
          type: 'string',
          description: 'The message in the server list',
          default: 'An EnderCloud test server',
          validation: { maxLength: 40 },
        },
      ],
      // The image's own CMD, with the MOTD as an (ignored) argument: the Startup tab renders it.
      command: ['/usr/local/bin/node', '--no-deprecation', '/opt/mc-server/server.cjs', '--motd={{MOTD}}'],
      images: { 'Test server': image, Other: OTHER_IMAGE },
    }),
  );
  await stack.must('PUT', '/groups/slow', {
    kind: 'persistent',
    variants: [{ id: 'main', template: { name: stack.template, version: '2' } }],
  });
  profile = mkdtempSync(join(tmpdir(), 'ec-panel-chromium-'));
  // Our flags exactly; headless: false so that Playwright adds no headless switch of its own (--headless is ours).
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: false,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
    timeout: 60_000,
  });
  page = context.pages()[0] ?? (await context.newPage());
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
    if (r.status() >= 400 && r.url().startsWith(stack.url))
      consoleErrors.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
}, 300_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  if (evil) await new Promise((r) => evil!.close(r));
  await stack?.close();
  await docker()
    .getImage(`${NEXT_REPO}:${nextTag}`)
    .remove()
    .catch(() => undefined);
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
    expect(
      await page.evaluate(async () => {
        const href = document.querySelector<HTMLLinkElement>('link[rel="icon"]')?.getAttribute('href');
        return href ? { href, status: (await fetch(href)).status } : null;
      }),
    ).toEqual({ href: '/favicon.svg', status: 200 });
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

  it("creates an instance from the template's variables as fields, after a preview in words; errors show at the field", async () => {
    await page.getByRole('link', { name: 'Instances', exact: true }).click();
    // The slow group's template has typed variables: each is a field with its rules and default; no KEY=VALUE box.
    await page.getByLabel('Group').selectOption('slow');
    const motd = page.getByLabel('MOTD', { exact: true });
    await motd.waitFor();
    expect(await page.locator('[data-variable="MOTD"]').innerText()).toMatch(
      /The message in the server list · string · at most 40 characters .*default An EnderCloud test server/,
    );
    expect(await page.getByRole('textbox', { name: /KEY=VALUE/ }).count()).toBe(0);
    await motd.fill('x'.repeat(50));
    // The preview runs the create's plan (InstanceCreator.plan): a given value that breaks its rule is refused there, at the field, before any Create.
    await button('Preview').click();
    const fieldError = page.locator('[data-variable="MOTD"] [role="alert"]');
    await fieldError.filter({ hasText: /^must be at most 40 characters$/ }).waitFor();
    expect(await motd.getAttribute('aria-invalid')).toBe('true');
    expect(((await stack.api('GET', '/instances')).body.instances as Loose[]).filter((i) => i.groupId === 'slow')).toEqual([]);
    await shot('02a-create-field-error');
    consoleErrors.length = 0; // the refused preview (400) was the point
    await page.getByLabel('Group').selectOption('survival');
    await page.getByLabel('Name (optional)').fill(NAME);
    await expect(button('Create').count()).resolves.toBe(0);
    await button('Preview').click();
    const preview = page.getByLabel('Deployment preview');
    await preview.waitFor();
    // In words: host, port, memory, what will be created.
    const words = await preview.innerText();
    expect(words).toContain(`${stack.template}@1`);
    expect(words).toContain(`Host: ${stack.hostId}`);
    expect(words).toMatch(/Port: the game listens on 25565 in the container; chosen by the agent from \d+-\d+/);
    expect(words).toContain('Memory: 256 MiB');
    expect(words).toMatch(/Will be created: a container, a data directory/);
    expect(words).not.toMatch(/[{}]/); // no raw JSON
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
    // Online: the buttons the API offers (`actions`), no Start and no Resume.
    await expectPowerButtons(['Stop', 'Restart', 'Pause']);
    await shot('03-online');
  });

  it('while installing: says so, asks for no log, offers no power action; then shows the install output', async () => {
    const requestsBefore = logRequests.length;
    slowInstanceId = (await stack.must('POST', '/instances', { groupId: 'slow', variantId: 'main', name: SLOW_NAME, start: false }))
      .id as string;
    await openInstance(slowInstanceId);
    await waitText('instance-state', 'installing');
    await page.getByTestId('log-status').filter({ hasText: 'Installing…' }).waitFor();
    await page
      .getByTestId('no-actions')
      .filter({ hasText: /installing|create in progress/ })
      .waitFor();
    expect(await powerButtons()).toEqual([]);
    await shot('03b-installing');
    expect(logRequests.slice(requestsBefore).filter((r) => r.includes(slowInstanceId))).toEqual([]);
    writeFileSync(join(stack.runtimeDir(slowInstanceId), INSTALL_GATE), 'go\n');
    await waitText('instance-state', 'stopped', 90_000);
    await page
      .getByTestId('install-output')
      .filter({ hasText: /preparing the world\s+install done/ })
      .waitFor();
    await expectPowerButtons(['Start', 'Restart']);
    const text = await page.locator('main').innerText();
    expect(text).not.toMatch(/https?:\/\/|refused GET|has no container/);
    await shot('03c-installed');
  });

  it("startup: the variables with description, rules, default and value; the server's rule message at the field; the rendered command; the image choice", async () => {
    await openInstance(slowInstanceId, 'startup');
    const command = page.getByTestId('startup-command');
    await command
      .filter({ hasText: '/usr/local/bin/node --no-deprecation /opt/mc-server/server.cjs --motd=An EnderCloud test server' })
      .waitFor();
    const motd = page.getByLabel('MOTD', { exact: true });
    expect(await page.locator('[data-variable="MOTD"]').innerText()).toMatch(
      /The message in the server list · string · at most 40 characters · applies at the next restart · default An EnderCloud test server/,
    );
    expect(await page.locator('[data-variable="LEVEL_SEED"]').innerText()).toMatch(/operators only/);
    expect(await page.getByLabel('LEVEL_SEED', { exact: true }).isDisabled()).toBe(false); // an admin may
    expect(await page.getByLabel('RCON_PASSWORD', { exact: true }).getAttribute('type')).toBe('password');
    await motd.fill('y'.repeat(41));
    await button('Save changes').click();
    await page
      .locator('[data-variable="MOTD"] [role="alert"]')
      .filter({ hasText: /^must be at most 40 characters$/ })
      .waitFor();
    consoleErrors.length = 0; // the refused change (400) was the point
    await shot('03d-startup-field-error');
    await motd.fill('Welcome from the panel');
    await button('Save changes').click();
    await page
      .getByRole('status')
      .filter({ hasText: /applies at the next restart/ })
      .waitFor();
    await page.getByTestId('pending-MOTD').filter({ hasText: 'Welcome from the panel' }).waitFor();
    expect(((await stack.get(slowInstanceId)).pendingChanges as Loose[]).map((c) => [c.key, c.value])).toContainEqual([
      'settings.MOTD',
      'Welcome from the panel',
    ]);
    // The image choice the template offers goes through the update plan.
    await page.getByLabel(/^Image \(the template offers 2\)$/).selectOption(OTHER_IMAGE);
    expect(await page.getByLabel('New image').inputValue()).toBe(OTHER_IMAGE);
    await expectAxeClean('instance startup');
    await shot('03e-startup');
    await openInstance(instanceId);
  });

  it('console: log and command line in one pane over RCON, ↑/↓ history, live graphs, a Kill that says it is not there yet', async () => {
    expect(new URL(page.url()).hash).toBe(`#/instances/${instanceId}`); // Console is the first tab
    await page.getByLabel('Console command').fill('list');
    await button('Send').click();
    await page
      .getByTestId('log')
      .getByTestId('console-output')
      .filter({ hasText: /players online/ })
      .waitFor();
    await page.getByLabel('Console command').fill('help');
    await button('Send').click();
    await page
      .getByTestId('console-output')
      .filter({ hasText: /> help/ })
      .waitFor();
    const line = page.getByLabel('Console command');
    await line.press('ArrowUp');
    expect(await line.inputValue()).toBe('help');
    await line.press('ArrowUp');
    expect(await line.inputValue()).toBe('list');
    await line.press('ArrowDown');
    expect(await line.inputValue()).toBe('help');
    await line.press('ArrowDown');
    expect(await line.inputValue()).toBe('');
    // The graphs fill from the stats stream (one sample a second here), no polling.
    await page
      .getByTestId('chart-memory-now')
      .filter({ hasText: /^used \d+(\.\d)? (KiB|MiB)$/ })
      .waitFor({ timeout: 30_000 });
    await page
      .getByTestId('chart-cpu-now')
      .filter({ hasText: /^CPU \d+ %$/ })
      .waitFor({ timeout: 30_000 });
    await page
      .getByTestId('chart-network-now')
      .filter({ hasText: /^in \d/ })
      .waitFor({ timeout: 30_000 });
    expect(await page.locator('[data-testid="chart-memory"] polyline').count()).toBeGreaterThan(0);
    // Kill applies to a running server: it asks first; Cancel leaves the server running.
    await button('Kill').click();
    const killDialog = page.getByRole('dialog', { name: /^Kill / });
    await killDialog.getByText('The server does not save').waitFor();
    await killDialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await killDialog.waitFor({ state: 'hidden' });
    expect(await page.getByTestId('instance-state').textContent()).toBe('online');
    await expectAxeClean('instance console');
    // The log pane shows what the API answers for the container's log.
    const log = await (
      await fetch(`${stack.url}/api/v1/instances/${instanceId}/logs?tail=200`, { headers: { authorization: `Bearer ${stack.adminToken}` } })
    ).text();
    const first = log.split('\n').find((l) => l.trim() !== '');
    if (first !== undefined) await page.getByTestId('log').filter({ hasText: first.trim() }).waitFor();
    await shot('04-console');
  });

  it("activity: the history and this instance's audit entries", async () => {
    await openTab('Activity');
    await page.getByLabel('State history, newest first').getByText('online').first().waitFor();
    await page.locator('tr[data-audit="instance.console"]').first().waitFor();
    await page.locator('tr[data-audit="instance.create"]').first().waitFor();
    await expectAxeClean('instance activity');
    await shot('04b-activity');
    await openTab('Console');
  });

  it("schedules: the list with next run, enabled and last result; create and edit with tasks, offsets and continueOnFailure; the server's message at the field; run now; disable; delete", async () => {
    await openTab('Schedules');
    const tab = page.locator('.tab-panel[data-tab="schedules"]');
    await tab.getByText('No schedule yet.').waitFor();
    await button('New schedule').click();
    let form = page.getByRole('form', { name: 'New schedule' });
    await form.getByLabel('Name').fill('nightly');
    // The server checks the cron: its message is shown at the field.
    await form.getByLabel('Cron (UTC)').fill('61 4 * * *');
    await form.getByLabel('Task 1 command').fill('list');
    await form.getByRole('button', { name: 'Save schedule' }).click();
    const cronError = form.locator('[data-field$="-cron"] [role="alert"]');
    await cronError.filter({ hasText: /^cron expression "61 4 \* \* \*": minute 61 is outside 0-59$/ }).waitFor();
    expect(await form.getByLabel('Cron (UTC)').getAttribute('aria-invalid')).toBe('true');
    expect(await form.locator('p.error').count()).toBe(0); // not repeated above the form
    consoleErrors.length = 0; // the refused schedule (400) was the point
    await form.getByLabel('Cron (UTC)').fill('0 4 * * *');
    // A power task after an offset that goes on when it fails, and an empty command task the server refuses at its field.
    await form.getByRole('button', { name: 'Add task' }).click();
    await form.getByLabel('Task 2 action').selectOption('power');
    await form.getByLabel('Task 2 power action').selectOption('restart');
    await form.getByLabel('Task 2 offset (seconds)').fill('30');
    await form.getByLabel('Task 2: continue on failure').check();
    await form.getByRole('button', { name: 'Add task' }).click();
    await form.getByLabel('only when online').check();
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await form
      .locator('[data-field$="-t2-payload"] [role="alert"]')
      .filter({ hasText: /^a command task needs one console line$/ })
      .waitFor();
    consoleErrors.length = 0;
    await shot('04c-schedule-form-error');
    await form.getByRole('button', { name: 'Remove task 3' }).click();
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await form.waitFor({ state: 'detached' });
    const row = (name: string) => tab.locator(`tr[data-schedule="${name}"]`);
    await row('nightly').waitFor();
    expect(await row('nightly').getByTestId('schedule-next').innerText()).toMatch(/^\d{4}-\d\d-\d\d 04:00 UTC \(in .+\)$/);
    expect(await row('nightly').getByTestId('schedule-enabled').innerText()).toBe('yes');
    expect(await row('nightly').getByTestId('schedule-last').innerText()).toBe('never run');
    expect(await row('nightly').innerText()).toMatch(/command list[\s\S]*power restart — after 30 s, continues on failure/);
    const stored = async () =>
      ((await stack.must('GET', `/instances/${instanceId}/schedules`)).schedules as Loose[]).find((x) => x.name === 'nightly')!;
    expect(await stored()).toMatchObject({
      cron: '0 4 * * *',
      enabled: true,
      onlyWhenOnline: true,
      tasks: [
        { action: 'command', payload: 'list', offsetSeconds: 0, continueOnFailure: false },
        { action: 'power', payload: 'restart', offsetSeconds: 30, continueOnFailure: true },
      ],
    });
    // Edit: the form holds the schedule as it is.
    await button('Edit nightly').click();
    form = page.getByRole('form', { name: 'Edit nightly' });
    expect(await form.getByLabel('Task 2 offset (seconds)').inputValue()).toBe('30');
    await form.getByLabel('Cron (UTC)').fill('30 3 * * 1');
    await form.getByLabel('Task 2 offset (seconds)').fill('60');
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await form.waitFor({ state: 'detached' });
    await page.getByTestId('schedules-status').filter({ hasText: 'Saved nightly.' }).waitFor();
    expect(await stored()).toMatchObject({ cron: '30 3 * * 1', tasks: [{ offsetSeconds: 0 }, { offsetSeconds: 60 }] });
    // Disable and enable.
    await button('Disable nightly').click();
    await row('nightly').getByTestId('schedule-enabled').filter({ hasText: /^no$/ }).waitFor();
    expect(await row('nightly').getByTestId('schedule-next').innerText()).toBe('disabled');
    expect(await stored()).toMatchObject({ enabled: false, nextRunAt: null });
    await button('Enable nightly').click();
    await row('nightly').getByTestId('schedule-enabled').filter({ hasText: /^yes$/ }).waitFor();
    expect((await stored()).nextRunAt).toEqual(expect.any(Number));
    // Run now: a command schedule runs at once; its last result shows after the run (Reload: schedules send no change event).
    await button('New schedule').click();
    form = page.getByRole('form', { name: 'New schedule' });
    await form.getByLabel('Name').fill('say-hi');
    await form.getByLabel('Task 1 command').fill('list');
    await form.getByLabel('enabled', { exact: true }).uncheck();
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await row('say-hi').waitFor();
    expect(await row('say-hi').getByTestId('schedule-next').innerText()).toBe('disabled');
    await button('Run say-hi now').click();
    await page.getByTestId('schedules-status').filter({ hasText: 'say-hi started.' }).waitFor();
    await expect
      .poll(
        async () => {
          await button('Reload').click();
          return row('say-hi').getByTestId('schedule-last').getAttribute('data-result');
        },
        { timeout: 20_000 },
      )
      .toBe('ok');
    expect(await row('say-hi').getByTestId('schedule-last').innerText()).toMatch(/^ok /);
    await expectAxeClean('instance schedules');
    await shot('04d-schedules');
    // Delete with a confirmation.
    await button('Delete say-hi').click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row('say-hi').waitFor({ state: 'detached' });
    expect(((await stack.must('GET', `/instances/${instanceId}/schedules`)).schedules as Loose[]).map((x) => x.name)).toEqual(['nightly']);
    // Left disabled: it never fires during the rest of the file.
    await button('Disable nightly').click();
    await row('nightly').getByTestId('schedule-enabled').filter({ hasText: /^no$/ }).waitFor();
    await openTab('Console');
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

  it('console: the log is kept across a container replacement (an image update), below a marker line, following the new container without a reload', async () => {
    await openTab('Console');
    const log = page.getByTestId('log');
    // The first container created the world; the next one loads it (the test server says which).
    await log.filter({ hasText: 'Creating level "world"' }).waitFor({ timeout: 30_000 });
    const before = (await log.innerText()).trim();
    const firstBefore = before.split('\n')[0]!.trim();
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const streamsBefore = eventStreams.length;
    const oldContainer = (await stack.containerOf(instanceId))?.Id as string;
    // A second tag of the same image: the update replaces the container (the new one prints the same start lines).
    const image = (await stack.get(instanceId)).image as string;
    await docker().getImage(image).tag({ repo: NEXT_REPO, tag: nextTag });
    await stack.must('POST', `/instances/${instanceId}/update`, { image: `${NEXT_REPO}:${nextTag}`, confirm: true });
    await page
      .getByTestId('log-mark')
      .filter({ hasText: /a new container started/ })
      .waitFor({ timeout: 90_000 });
    await until('online on the new image', async () => (await stack.get(instanceId)).image === `${NEXT_REPO}:${nextTag}`, 90_000, 200);
    await waitText('instance-state', 'online', 90_000);
    // Below the marker: the new container's own start.
    await page.waitForFunction(
      () => {
        const text = document.querySelector('[data-testid="log"]')?.textContent ?? '';
        const at = text.indexOf('a new container started');
        return at > 0 && text.slice(at).includes('Loading level "world"');
      },
      undefined,
      { timeout: 60_000 },
    );
    expect((await stack.containerOf(instanceId))?.Id).not.toBe(oldContainer);
    const [above, below] = (await log.innerText()).split(/── a new container started[^\n]*──/);
    expect(above).toContain(firstBefore); // the earlier container's lines are kept
    expect(above).toContain('Creating level "world"');
    expect(below).toContain('Loading level "world"');
    expect(below).not.toContain('Creating level "world"');
    expect(await page.getByTestId('log-mark').count()).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(eventStreams.length).toBe(streamsBefore);
    await expectAxeClean('instance console after a replacement');
    await shot('05b-console-replaced');
  });

  it('takes a backup and restores it with a typed confirmation', async () => {
    await openTab('Backups');
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
    expect(await row.first().getByRole('link', { name: 'Download' }).getAttribute('href')).toBe(
      `/api/v1/instances/${instanceId}/backups/${backupId}/download`,
    );
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
    await until(
      'restore command succeeded',
      async () => (await stack.commands(instanceId)).some((c) => c.kind === 'restore' && c.status === 'succeeded'),
      60_000,
      200,
    );
    await expectAxeClean('instance backups');
    await shot('07-restored');
  });

  it('files: browse, edit with CodeMirror (what the server reads after a start), upload by button and drop, download, folder, move, archive, extract, delete', async () => {
    await waitText('instance-state', 'stopped');
    const dataDir = stack.runtimeDir(instanceId);
    const editorChunks: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (/\/assets\/Editor-[^/]+\.js$/.test(r.url())) editorChunks.push(r.url());
    };
    page.on('request', onRequest);
    await openTab('Files');
    const row = (name: string) => page.locator(`tr[data-file="${name}"]`);
    await row('level.json').waitFor();
    // The editor is not part of the first page: its chunk loads when a file is opened.
    expect(editorChunks).toEqual([]);
    await expectAxeClean('instance files');
    await shot('07b-files');
    await row('level.json').getByRole('button', { name: 'Edit level.json' }).click();
    const editor = page.getByTestId('file-editor');
    await editor.locator('.cm-content').waitFor();
    expect(editorChunks).toHaveLength(1);
    const level = JSON.parse(readFileSync(join(dataDir, 'level.json'), 'utf8')) as Loose;
    expect(await editor.locator('.cm-content').innerText()).toContain(String(level.seed));
    // Edit as a user would: select all, type the new document.
    await editor.locator('.cm-content').click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    const edited = { ...level, seed: 'edited-in-the-browser' };
    await page.keyboard.insertText(JSON.stringify(edited, null, 2));
    await expectAxeClean('instance files editor');
    await shot('07c-file-editor');
    const saved = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().includes('/files/content'));
    await editor.getByRole('button', { name: 'Save file' }).click();
    const savedRes = await saved;
    expect(`${savedRes.status()} ${await savedRes.text()}`).toMatch(/^200 /);
    await page.getByTestId('files-status').filter({ hasText: 'Saved /level.json.' }).waitFor();
    expect((JSON.parse(readFileSync(join(dataDir, 'level.json'), 'utf8')) as Loose).seed).toBe('edited-in-the-browser');
    await editor.getByRole('button', { name: 'Close' }).click();

    // Upload with the button (a streamed PUT of the file) and by dropping a file on the folder.
    await page
      .getByLabel('Upload files')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded by button\n') });
    await row('notes.txt').waitFor();
    expect(readFileSync(join(dataDir, 'notes.txt'), 'utf8')).toBe('uploaded by button\n');
    const drop = await page.evaluateHandle(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['dropped\n'], 'dropped.yml', { type: 'text/yaml' }));
      return dt;
    });
    await page.getByTestId('dropzone').dispatchEvent('drop', { dataTransfer: drop });
    await row('dropped.yml').waitFor();
    expect(readFileSync(join(dataDir, 'dropped.yml'), 'utf8')).toBe('dropped\n');
    // Download: the file's bytes.
    const download = page.waitForEvent('download');
    await row('notes.txt').getByRole('link', { name: 'Download notes.txt' }).click();
    const file = await (await download).path();
    expect(readFileSync(file, 'utf8')).toBe('uploaded by button\n');
    // A folder, a move into it, an archive of it, its extraction elsewhere, and deletes with a confirmation.
    await page.getByLabel('New folder name').fill('configs');
    await button('New folder').click();
    await row('configs').waitFor();
    await row('dropped.yml').getByRole('button', { name: 'Rename or move dropped.yml' }).click();
    await page.getByLabel('New name or path for dropped.yml').fill('/configs/moved.yml');
    await button('Move').click();
    await row('dropped.yml').waitFor({ state: 'detached' });
    expect(readFileSync(join(dataDir, 'configs', 'moved.yml'), 'utf8')).toBe('dropped\n');
    await row('configs').getByRole('checkbox').check();
    await button('Archive selected').click();
    const archiveRow = page.locator('tr[data-file^="archive-"]');
    await archiveRow.waitFor();
    const archiveName = (await archiveRow.getAttribute('data-file'))!;
    await row('configs').getByRole('button', { name: 'Delete configs' }).click();
    let dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row('configs').waitFor({ state: 'detached' });
    expect(existsSync(join(dataDir, 'configs'))).toBe(false);
    await archiveRow.getByRole('button', { name: `Extract ${archiveName}` }).click();
    await row('configs').waitFor();
    expect(readFileSync(join(dataDir, 'configs', 'moved.yml'), 'utf8')).toBe('dropped\n');
    await row('configs').getByRole('button', { name: 'configs/' }).click();
    await row('moved.yml').waitFor();
    await page.getByRole('navigation', { name: 'Folder' }).getByRole('button', { name: '/ (server)' }).click();
    for (const name of ['notes.txt', archiveName]) await row(name).getByRole('checkbox').check();
    await button('Delete selected').click();
    dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row('notes.txt').waitFor({ state: 'detached' });
    expect(existsSync(join(dataDir, 'notes.txt'))).toBe(false);
    await shot('07d-files-done');
    page.off('request', onRequest);

    // The server reads the edited file when it starts.
    await button('Start').click();
    await waitText('instance-state', 'online', 90_000);
    await openTab('Console');
    await page.getByTestId('log').filter({ hasText: 'Loading level "world" (seed edited-in-the-browser)' }).waitFor({ timeout: 30_000 });
    await shot('07e-edited-file-read');
    await button('Stop').click();
    await waitText('instance-state', 'stopped');
    await waitText('active-action', 'none');
  });

  it('deletes with scopes: player data needs the typed name', async () => {
    await openTab('Settings');
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
    expect((await stack.api('GET', `/hosts/${stack.hostId}`)).body).toMatchObject({
      status: 'MAINTENANCE',
      maintenance: { enabled: true, message: 'disk swap' },
    });
    await shot('10-host-maintenance');
    await button('End maintenance').click();
    await button('Start maintenance').waitFor();
    await until('host back ONLINE', async () => (await stack.api('GET', `/hosts/${stack.hostId}`)).body.status === 'ONLINE', 20_000, 100);
    await page.getByRole('link', { name: 'Audit log' }).click();
    for (const action of [
      'host.maintenance',
      'instance.delete',
      'instance.restore',
      'instance.backup',
      'instance.console',
      'instance.create',
    ]) {
      await page.getByRole('rowheader', { name: action, exact: true }).first().waitFor();
    }
    await shot('11-audit');
  });

  it('hosts: memory reserved / total from the host view, and a heartbeat age that ticks between events', async () => {
    await page.getByRole('link', { name: 'Hosts' }).click();
    const host = (await stack.api('GET', `/hosts/${stack.hostId}`)).body;
    const total = host.resources.memoryMb as number;
    const mib = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : `${n} MiB`);
    await page
      .getByTestId(`memory-${stack.hostId}`)
      .filter({ hasText: new RegExp(`^\\d+ (MiB|GiB) / ${mib(total).replace('.', '\\.')}$`) })
      .waitFor();
    // Heartbeats come every 500 ms and send no change event: a fetched age is 0-1 s, so 3 s or more is the clock ticking.
    await page
      .getByTestId(`heartbeat-${stack.hostId}`)
      .filter({ hasText: /^([3-9]|\d\d+) s ago$/ })
      .waitFor({ timeout: 20_000 });
    await shot('11b-hosts');
  });

  it('fleets: the class reads once, archived rows show no players and no Despawn', async () => {
    await stack.putGroup(
      'arch',
      { savegame: { mode: 'archive' } },
      {
        idleTiers: [
          { after: '2s', action: 'stop' },
          { after: '3s', action: 'archive' },
        ],
      },
    );
    const spawned = (await stack.must('POST', '/groups/arch/spawn', { name: `${stack.run}-arch` })).id as string;
    await stack.waitState(spawned, 'online', 60_000);
    const allocation = await stack.must('POST', '/groups/arch/allocations', {});
    await page.getByRole('link', { name: 'Groups & fleets' }).click();
    const row = page.locator(`tr[data-fleet-instance="${stack.run}-arch"]`);
    await row
      .getByTestId('fleet-class')
      .filter({ hasText: /^allocated$/ })
      .waitFor();
    expect(await row.getByRole('button', { name: 'Despawn' }).count()).toBe(1);
    await shot('11c-fleet-allocated');
    await stack.must('DELETE', `/allocations/${String(allocation.allocationId)}`);
    await stack.waitState(spawned, 'archived', 60_000);
    await row
      .getByTestId('fleet-class')
      .filter({ hasText: /^archived$/ })
      .waitFor();
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
    await page
      .getByRole('row', { name: new RegExp(`${stack.run}-throwaway`) })
      .getByText(/^revoked/)
      .waitFor();
    expect((await fetch(`${stack.url}/api/v1/instances`, { headers: { authorization: `Bearer ${throwaway}` } })).status).toBe(401);
    await shot('12-tokens');
  });

  it("settings: Reinstall asks for the typed name and shows the API's answer", async () => {
    await openInstance(slowInstanceId, 'settings');
    await button(`Reinstall ${SLOW_NAME}…`).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(`Type ${SLOW_NAME} to confirm`).fill(SLOW_NAME);
    const answered = page.waitForResponse((r) => r.url().endsWith(`/instances/${slowInstanceId}/reinstall`));
    await dialog.getByRole('button', { name: 'Reinstall', exact: true }).click();
    const res = await answered;
    if (res.status() >= 400) {
      // The route is another helper's: until it lands, its refusal is shown in the dialog, in words.
      await dialog.getByRole('alert').waitFor();
      expect(await dialog.getByRole('alert').innerText()).not.toMatch(/https?:\/\//);
      await shot('17b-reinstall-refused');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      consoleErrors.length = 0;
    } else {
      await page.getByRole('status').filter({ hasText: 'Reinstall queued.' }).waitFor();
      await shot('17b-reinstall');
    }
  });

  it('keyboard alone reaches every action of the server page (the schedule form too) with a visible focus ring', async () => {
    for (const tab of ['console', 'startup', 'files', 'schedules', 'settings']) {
      await openInstance(readOnlyInstanceId, tab);
      await page.locator(`.tab-panel[data-tab="${tab}"]`).waitFor();
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
      // The schedule form's fields (a task's action, command, offset, its checkboxes) are reached too.
      if (tab === 'schedules') {
        await button('New schedule').click();
        await page.getByRole('form', { name: 'New schedule' }).waitFor();
      }
      if (tab === 'files')
        await page
          .locator('tr[data-file]')
          .first()
          .waitFor()
          .catch(() => undefined);
      await page.evaluate(() => {
        (document.activeElement as HTMLElement | null)?.blur();
        window.scrollTo(0, 0);
      });
      const reached = new Set<string>();
      const rings: string[] = [];
      for (let n = 0; n < 120; n++) {
        await page.keyboard.press('Tab');
        const info = await page.evaluate(() => {
          const el = document.activeElement as HTMLElement | null;
          if (!el || el === document.body) return null;
          if (!el.dataset.kb) el.dataset.kb = String(Math.random());
          const style = getComputedStyle(el);
          // CodeMirror draws its ring on the editor around the focused content.
          const ring = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
          return {
            key: el.dataset.kb,
            ring,
            what: `${el.tagName} ${el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 30) ?? ''}`,
          };
        });
        if (!info) continue;
        if (!info.ring) rings.push(info.what);
        if (reached.has(info.key)) break; // wrapped around
        reached.add(info.key);
      }
      const missed = await page.evaluate(
        (keys) =>
          [
            ...document.querySelectorAll<HTMLElement>(
              'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea, [tabindex="0"]',
            ),
          ]
            .filter((el) => el.offsetParent !== null && !el.closest('dialog:not([open])') && !el.classList.contains('skip'))
            .filter(
              (el) =>
                !keys.includes(el.dataset.kb ?? '') &&
                !(
                  el instanceof HTMLInputElement &&
                  el.type === 'file' &&
                  keys.includes((el.closest('label') as HTMLElement | null)?.dataset.kb ?? '')
                ),
            )
            .map((el) => `${el.tagName} ${el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 30) ?? ''}`),
        [...reached],
      );
      expect(missed, `${tab}: not reached by Tab`).toEqual([]);
      expect(rings, `${tab}: focused without a visible ring`).toEqual([]);
    }
    await page.keyboard.press('Shift+Tab');
    await shot('18-keyboard-focus');
  });

  it('phone 390×844 and desktop: no view scrolls sideways, the top bar is one line, the server page is tabbed; axe finds nothing serious on any view', async () => {
    const views = [
      'overview',
      'hosts',
      'groups',
      'instances',
      'templates',
      'audit',
      'tokens',
      ...['console', 'files', 'startup', 'backups', 'schedules', 'settings', 'activity'].map((t) => `instances/${slowInstanceId}/${t}`),
    ];
    try {
      for (const [width, height] of [
        [390, 844],
        [1280, 800],
      ] as const) {
        await page.setViewportSize({ width, height });
        for (const view of views) {
          await page.goto(`${stack.url}/#/${view}`);
          await page.locator('main h1').first().waitFor();
          await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
          const { scroll, viewport, culprits } = await sideways();
          // (The top bar's "Reconnecting…" is wider than "Live": the brand gives way, so a reconnect never widens the page.)
          expect(scroll, `${view} at ${width} px is ${scroll} px wide (${culprits.join('; ')})`).toBeLessThanOrEqual(viewport);
          const bar = await page.locator('header.top').evaluate((el) => {
            const middles = [...el.children]
              .filter((c) => (c as HTMLElement).offsetParent !== null)
              .map((c) => c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2);
            return { spread: Math.max(...middles) - Math.min(...middles), height: el.getBoundingClientRect().height };
          });
          expect(bar.height, `${view}: the top bar is one line`).toBeLessThan(60);
          expect(bar.spread, `${view}: the top bar's items sit on one line`).toBeLessThan(8);
          if (view.startsWith('instances/'))
            expect(await page.getByRole('navigation', { name: 'Server sections' }).getByRole('link').count()).toBe(7);
          await expectAxeClean(`${view} at ${width}×${height}`);
          if (
            width === 390 &&
            [
              'hosts',
              'groups',
              `instances/${slowInstanceId}/console`,
              `instances/${slowInstanceId}/files`,
              `instances/${slowInstanceId}/startup`,
            ].includes(view)
          ) {
            await shot(`19-phone-${view.replace(/\//g, '-').replace(slowInstanceId, 'slow')}`);
          }
        }
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('a normal session left no console error and no failed request (first load, install, log, actions, every page)', () => {
    expect(consoleErrors).toEqual([]);
  });

  it('refuses a cross-site form post that carries the session cookie (CSRF)', async () => {
    // Another port on the same host is the same *site*: SameSite=Strict sends the cookie; the CSRF check must refuse.
    evil = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<form id="f" method="POST" action="${stack.url}/api/v1/instances/${readOnlyInstanceId}/start" enctype="text/plain"><input name="x" value="1"></form><script>document.getElementById('f').submit()</script>`,
        ),
    );
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
      method: 'POST',
      headers: { cookie: `${cookie.name}=${cookie.value}`, 'x-endercloud-csrf': '1', origin: evilUrl.slice(0, -1) },
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
    await stack.must('POST', `/instances/${readOnlyInstanceId}/schedules`, {
      name: 'ro-nightly',
      cron: '0 4 * * *',
      enabled: false,
      onlyWhenOnline: false,
      tasks: [{ action: 'command', payload: 'list', offsetSeconds: 0, continueOnFailure: false }],
    });
    for (const tab of ['console', 'files', 'startup', 'backups', 'schedules', 'settings', 'activity']) {
      await openInstance(readOnlyInstanceId, tab);
      await page.locator(`.tab-panel[data-tab="${tab}"]`).waitFor();
      if (tab === 'backups') await page.getByRole('heading', { name: 'Backups' }).waitFor();
      if (tab === 'schedules') await page.locator('tr[data-schedule="ro-nightly"]').waitFor();
      if (tab === 'files')
        await page
          .getByRole('alert')
          .filter({ hasText: /^Not allowed: .*files:read/ })
          .waitFor();
      if (tab === 'startup')
        await page
          .getByLabel('MOTD', { exact: true })
          .waitFor()
          .catch(() => undefined);
      for (const name of [
        'Start',
        'Stop',
        'Restart',
        'Pause',
        'Resume',
        'Kill',
        'Take backup',
        'Send',
        'Change',
        'Save changes',
        'New folder',
        'Delete selected',
        `Delete ${READ_ONLY_NAME}…`,
        `Reinstall ${READ_ONLY_NAME}…`,
        'New schedule',
        'Save schedule',
        'Run ro-nightly now',
        'Enable ro-nightly',
        'Edit ro-nightly',
        'Delete ro-nightly',
      ]) {
        expect(await button(name).count(), `${tab}: ${name}`).toBe(0);
      }
      expect(
        await page.locator('.tab-panel input:not([disabled]):not([type="checkbox"]), .tab-panel textarea').count(),
        `${tab}: no editable field`,
      ).toBe(0);
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
    const writer = (await stack.must('POST', '/tokens', { name: `${stack.run}-writer`, scopes: ['read', 'instances:write'] }))
      .secret as string;
    await login(writer);
    await openInstance(slowInstanceId, 'startup');
    await expectPowerButtons(['Start', 'Restart']);
    // On the Startup tab the operator-only variable is not editable for this token...
    await page.getByLabel('LEVEL_SEED', { exact: true }).waitFor();
    expect(await page.getByLabel('LEVEL_SEED', { exact: true }).isDisabled()).toBe(true);
    expect(await page.getByLabel('MOTD', { exact: true }).isDisabled()).toBe(false);
    // ...and the free form on the Settings tab is refused by the API, in words.
    await openTab('Settings');
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
    await expectAxeClean('login');
    expect(pageErrors).toEqual([]);
    expect(axeResults.filter((r) => r.violations.length > 0)).toEqual([]);
    expect(axeResults.length).toBeGreaterThan(30);
  });
});
