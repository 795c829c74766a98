// Wings' runtime layout, the pure parts: the orchestrator's agent body for a
// `startup` template (layout wings, STARTUP and Wings' variables, the published
// address left for the agent), the agent's labels (the address filled in, the
// config hash the request's own), and the refusals.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFilesOf, fillPublishedIp, publishedIp, wingsAgentEnv } from '../../src/agent/egg-runtime.js';
import { configHash, containerLabels, validateCreateRequest } from '../../src/agent/container-config.js';
import { normalizeTemplate } from '../../src/contracts/catalog-rules.js';
import type { Group, TemplateVersion } from '../../src/domain/index.js';
import { parseEgg } from '../../src/eggs/parse-egg.js';
import { agentCreateBody, buildInstance } from '../../src/server/services/instance-config.js';

const egg = JSON.parse(readFileSync(new URL('../fixtures/eggs/paper-yolks.v2.json', import.meta.url), 'utf8')) as Record<string, unknown>;

function instanceOf(body: ReturnType<typeof parseEgg>['template'], image?: string) {
  const spec = normalizeTemplate(body as never);
  const template: TemplateVersion = { name: 'paper', version: '1', spec, specHash: 'x', createdAt: 0 };
  const group: Group = {
    id: 'g',
    kind: 'persistent',
    placement: 'packed',
    caps: {},
    variants: [{ id: 'v', template: { name: 'paper', version: '1' }, extraLayers: [], env: {} }],
    scaling: null,
    createdAt: 0,
    updatedAt: 0,
  };
  const instance = {
    ...buildInstance({
      id: 'i-0123456789ab',
      name: 'srv',
      group,
      variant: group.variants[0]!,
      template,
      hostId: 'host-a',
      desiredState: 'running',
      now: 0,
      generateSecret: () => 's',
      ...(image ? { image } : {}),
    }),
    version: 1,
  };
  return { spec, instance };
}

describe('agentCreateBody: a startup template runs in layout wings', () => {
  const { spec, instance } = instanceOf(parseEgg(egg, { memoryMb: 512 }).template);
  const body = agentCreateBody(instance, spec);
  it("gives STARTUP as the egg wrote it and Wings' variables; no command", () => {
    expect(body.layout).toBe('wings');
    expect(body.command).toBeUndefined();
    expect(body.env).toMatchObject({
      STARTUP: (egg.startup as string).replace(
        '{{server.build.default.ip}}:{{server.build.default.port}}',
        '{{SERVER_IP}}:{{SERVER_PORT}}',
      ),
      SERVER_MEMORY: '512',
      SERVER_PORT: '25565',
      P_SERVER_UUID: 'i-0123456789ab',
      P_SERVER_LOCATION: 'host-a',
      SERVER_JARFILE: 'server.jar',
      MOTD: 'A Paper egg; on yolks',
    });
    // SERVER_IP and TZ are the agent's: it alone knows the address it publishes on and its time zone.
    expect(body.env).not.toHaveProperty('SERVER_IP');
    expect(body.env).not.toHaveProperty('TZ');
  });
  it('leaves the published address in the config edits for the agent', () => {
    expect(body.configFiles).toEqual([
      {
        path: 'server.properties',
        parser: 'properties',
        edits: [
          { key: 'server-ip', value: '{{server.build.default.ip}}' },
          { key: 'server-port', value: '25565' },
          { key: 'query.port', value: '25565' },
          { key: 'motd', value: 'A Paper egg; on yolks' },
        ],
      },
      // The eula feature: eula.txt from the acceptance variable (false until the operator sets it).
      { path: 'eula.txt', parser: 'properties', edits: [{ key: 'eula', value: 'false' }] },
    ]);
  });
  it("Wings' own variables win over an egg variable of the same name", () => {
    const memoryVariable = {
      ...egg,
      variables: [
        ...(egg.variables as object[]),
        {
          name: 'Port',
          env_variable: 'SERVER_PORT',
          default_value: '1',
          user_viewable: true,
          user_editable: true,
          rules: 'required|string',
          field_type: 'text',
        },
      ],
    };
    const { spec: s, instance: i } = instanceOf(parseEgg(memoryVariable).template);
    expect(agentCreateBody(i, s).env?.SERVER_PORT).toBe('25565');
  });
  it("the image chosen at creation is the container's", () => {
    const { spec: s, instance: i } = instanceOf(parseEgg(egg).template, 'endercloud-test/yolks-java17:local');
    expect(agentCreateBody(i, s).image).toBe('endercloud-test/yolks-java17:local');
  });
  it('a template with command keeps its layout: /data, its command, SERVER_IP 0.0.0.0 from the orchestrator', () => {
    const { startup: _startup, ...legacy } = parseEgg(egg).template as Record<string, unknown>;
    const { spec: s, instance: i } = instanceOf({ ...legacy, command: ['/bin/sh', '-c', 'exec node x'] } as never);
    const b = agentCreateBody(i, s);
    expect(b.layout).toBeUndefined();
    expect(b.env).toMatchObject({ SERVER_IP: '0.0.0.0' });
    expect(b.configFiles?.[0]?.edits[0]).toEqual({ key: 'server-ip', value: '0.0.0.0' });
  });
});

describe('the agent side of layout wings', () => {
  const table: [string, string][] = [
    ['0.0.0.0', '0.0.0.0'],
    ['::', '0.0.0.0'],
    ['127.0.0.1', '127.0.0.1'],
    ['10.1.2.3', '10.1.2.3'],
  ];
  for (const [bind, ip] of table) it(`publishes on ${bind}: the server is told ${ip}`, () => expect(publishedIp(bind)).toBe(ip));

  const req = {
    groupId: 'g',
    variantId: 'v',
    image: 'img:1',
    resources: { memoryMb: 256 },
    layout: 'wings' as const,
    env: { STARTUP: 'x' },
    configFiles: [
      { path: 'a.yml', parser: 'yaml' as const, edits: [{ key: 'listeners[0].host', value: '{{server.build.default.ip}}:25565' }] },
    ],
  };
  it("fills the address into the labelled edits; the config hash stays the request's", () => {
    const labels = containerLabels('host-a', 'i-1', req, 30001, '10.1.2.3');
    expect(configFilesOf(labels)).toEqual(fillPublishedIp(req.configFiles, '10.1.2.3'));
    expect(configFilesOf(labels)[0]?.edits[0]?.value).toBe('10.1.2.3:25565');
    expect(labels['orchestrator.config']).toBe(configHash(req));
    expect(configHash(req)).not.toBe(configHash({ ...req, layout: undefined }));
  });
  it('SERVER_IP and TZ come after the env', () => {
    expect(wingsAgentEnv('127.0.0.1', 'Europe/Berlin')).toEqual({ SERVER_IP: '127.0.0.1', TZ: 'Europe/Berlin' });
  });
  it('refuses a command with layout wings', () => {
    expect(() => validateCreateRequest('i-1', { ...req, command: ['x'] })).toThrow(
      /layout wings runs the image's own entrypoint \(it reads STARTUP\); a command would replace it/,
    );
  });
  it('the import lists a dotted startup reference nothing resolves', () => {
    const { preview } = parseEgg({ ...egg, startup: './srv --id {{server.uuid}} --ip {{server.build.default.ip}}' });
    expect(preview.untranslated).toContainEqual({
      field: 'startup',
      reason: "refers to {{server.uuid}}, which names nothing an instance has: the image's entrypoint is given it as it is",
    });
    expect(preview.untranslated.filter((u) => u.field === 'startup')).toHaveLength(1);
  });
  it('the catalog refuses startup and command together', () => {
    expect(() => normalizeTemplate({ image: 'a:1', resources: { memoryMb: 256 }, startup: 'x', command: ['y'] } as never)).toThrow(
      /startup and command cannot both be set/,
    );
  });
});
