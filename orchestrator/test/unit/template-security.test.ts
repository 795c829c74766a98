// A template's hardening opt-outs (`security.capAdd`, `security.readOnlyRootfs`):
// checked by the catalog rules (an unknown capability is refused by name),
// stored only when set (existing specs hash the same), carried to the agent's
// create body, and checked again by the agent before anything is touched.
import { describe, expect, it } from 'vitest';
import { configHash, validateCreateRequest } from '../../src/agent/container-config.js';
import { TemplateBody, bodyProblems } from '../../src/contracts/catalog.js';
import { normalizeTemplate } from '../../src/contracts/catalog-rules.js';
import type { Group, TemplateVersion } from '../../src/domain/index.js';
import { agentCreateBody, buildInstance } from '../../src/server/services/instance-config.js';
import { AppError } from '../../src/shared/errors.js';
import { capAddProblem } from '../../src/shared/capabilities.js';

const base = { image: 'img:1', resources: { memoryMb: 256 } };

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

function instanceWith(spec: TemplateVersion['spec']) {
  const template: TemplateVersion = { name: 't', version: '1', spec, specHash: 'x', createdAt: 0 };
  const group: Group = {
    id: 'g',
    kind: 'persistent',
    placement: 'packed',
    caps: {},
    variants: [{ id: 'v', template: { name: 't', version: '1' }, extraLayers: [], env: {} }],
    scaling: null,
    createdAt: 0,
    updatedAt: 0,
  };
  return {
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
    }),
    version: 1,
  };
}

describe('template security', () => {
  it('keeps every default when absent: no security in the spec, none in the create body', () => {
    const spec = normalizeTemplate(base as never);
    expect(spec.security).toBeUndefined();
    expect(spec.user).toEqual({ mode: 'endercloud' });
    expect(agentCreateBody(instanceWith(spec), spec).security).toBeUndefined();
    expect(normalizeTemplate({ ...base, security: { capAdd: [], readOnlyRootfs: true } } as never).security).toBeUndefined();
  });

  it('stores the declared capabilities and the read-only opt-out and sends them to the agent', () => {
    const spec = normalizeTemplate({ ...base, security: { capAdd: ['CHOWN', 'SETUID', 'SETGID'], readOnlyRootfs: false } } as never);
    expect(spec.security).toEqual({ capAdd: ['CHOWN', 'SETUID', 'SETGID'], readOnlyRootfs: false });
    const body = agentCreateBody(instanceWith(spec), spec);
    expect(body.security).toEqual({ capAdd: ['CHOWN', 'SETUID', 'SETGID'], readOnlyRootfs: false });
    expect(() => validateCreateRequest('i-1', body)).not.toThrow();
  });

  it('refuses an unknown capability, ALL, a CAP_ spelling and a repeat, naming the field and the name', () => {
    const unknown = refusal(() => normalizeTemplate({ ...base, security: { capAdd: ['CHOWN', 'NET_FLY'] } } as never));
    expect(unknown.code).toBe('VALIDATION_FAILED');
    expect(unknown.message).toBe('body/security/capAdd names "NET_FLY", which is not a Linux capability');
    expect(unknown.details).toEqual({ field: 'security/capAdd' });
    expect(refusal(() => normalizeTemplate({ ...base, security: { capAdd: ['ALL'] } } as never)).message).toMatch(/may not be ALL/);
    expect(capAddProblem(['CAP_CHOWN'])).toBe('names "CAP_CHOWN", which is not a Linux capability (write CHOWN)');
    expect(capAddProblem(['KILL', 'KILL'])).toBe('names KILL twice');
    expect(bodyProblems(TemplateBody, { ...base, security: { capAdd: ['KILL'], privileged: true } })).not.toEqual([]);
  });

  it('the agent refuses an unknown capability itself, and the opt-outs change the config hash only when set', () => {
    const req = { groupId: 'g', variantId: 'v', image: 'img:1', resources: { memoryMb: 64 } };
    expect(refusal(() => validateCreateRequest('i-1', { ...req, layers: [], security: { capAdd: ['SYS_FLY'] } })).message).toContain(
      '"SYS_FLY"',
    );
    expect(configHash({ ...req, security: {} })).toBe(configHash(req));
    expect(configHash({ ...req, security: { capAdd: ['KILL'] } })).not.toBe(configHash(req));
    expect(configHash({ ...req, security: { readOnlyRootfs: false } })).not.toBe(configHash(req));
  });
});
