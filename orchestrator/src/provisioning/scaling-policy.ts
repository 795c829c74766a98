// A group's `scaling` policy (docs/provisioning.md): its API schema and the parser that
// turns a request body into the stored ScalingPolicy, refusing anything it
// cannot act on with a message naming the field.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { durationAt, intAt, invalid, objectAt, oneOf, onlyKnownKeys } from './fields.js';
import {
  IDLE_ACTIONS,
  type BufferPolicy,
  type IdleAction,
  type IdleTier,
  type SavegamePolicy,
  type ScaleUpRule,
  type ScalingPolicy,
} from '../domain/scaling.js';

// The shapes are the domain's (domain/scaling.ts); re-exported for the provisioning rules and their callers.
export { IDLE_ACTIONS };
export type { BufferPolicy, IdleAction, IdleTier, ScalingPolicy };

export const SCALING_DEFAULTS = {
  minInstances: 0,
  savegameMode: 'archive',
  scaleUpStep: 1,
  scaleUpCooldown: '1m',
} as const;

const MAX_INSTANCES = 1_000_000;
const ACTION_RANK: Record<IdleAction, number> = { pause: 0, stop: 1, archive: 2 };

const Duration = (description: string): TSchema =>
  Type.String({ minLength: 2, maxLength: 32, description: `${description} (duration: integer + ms|s|m|h|d, e.g. "10m")` });
const EchoMs = (of: string): TSchema =>
  Type.Integer({ minimum: 0, description: `stored echo of ${of} in ms; on input optional and must equal it` });
const Replaced = (by: string): TSchema => Type.Unknown({ deprecated: true, description: `refused: replaced by ${by}` });

export const IdleTierSchema = Type.Object(
  {
    after: Duration('zero logged-in players for this long in a row'),
    afterMs: Type.Optional(EchoMs('after')),
    // 'delete' is listed only so the parser can refuse it with a message naming its replacement.
    action: Type.Union([Type.Literal('pause'), Type.Literal('stop'), Type.Literal('archive'), Type.Literal('delete')], {
      description: "pause | stop | archive ('delete' is refused: use archive)",
    }),
  },
  { additionalProperties: false },
);

/** A list of idle tiers, or null (`nullable`, so one tier is never coerced into the null branch). */
export const NullableIdleTiersSchema = Type.Unsafe<Static<typeof IdleTierSchema>[] | null>({
  ...Type.Array(IdleTierSchema, { maxItems: 3 }),
  nullable: true,
});

/** The `scaling` body of `PUT /groups/:id`; parseScalingPolicy applies the rules JSON schema cannot say. */
export const ScalingSchema = Type.Object(
  {
    minInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INSTANCES })),
    maxInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INSTANCES })),
    buffer: Type.Optional(
      Type.Object(
        {
          count: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INSTANCES })),
          percent: Type.Optional(Type.Integer({ minimum: 0, maximum: 99 })),
        },
        { additionalProperties: false },
      ),
    ),
    idleTiers: Type.Optional(Type.Array(IdleTierSchema, { maxItems: 3 })),
    savegame: Type.Optional(
      Type.Object(
        {
          mode: Type.Union([Type.Literal('discard'), Type.Literal('archive')]),
          retention: Type.Optional(Duration('how long an archived world is kept')),
          retentionMs: Type.Optional(EchoMs('retention')),
        },
        { additionalProperties: false },
      ),
    ),
    scaleUp: Type.Optional(
      Type.Object(
        {
          whenFillAbove: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
          step: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          cooldown: Type.Optional(Duration('minimum time between two scale-ups')),
          cooldownMs: Type.Optional(EchoMs('cooldown')),
        },
        { additionalProperties: false },
      ),
    ),
    scaleDown: Type.Optional(
      Type.Object(
        {
          whenEmptyFor: Duration('an unallocated Ready instance empty this long may be despawned'),
          whenEmptyForMs: Type.Optional(EchoMs('whenEmptyFor')),
        },
        { additionalProperties: false },
      ),
    ),
    releaseWhenEmptyFor: Type.Optional(Duration('an allocation whose instance stays empty this long is released')),
    releaseWhenEmptyForMs: Type.Optional(EchoMs('releaseWhenEmptyFor')),
    warmBuffer: Type.Optional(Replaced('buffer.count')),
  },
  { additionalProperties: false },
);

/**
 * `scaling` as the group body declares it: the policy or null. `nullable`
 * rather than a union with null, so a structural error names its field
 * instead of AJV's "must be null" for the last branch of the union.
 */
export const NullableScalingSchema = Type.Unsafe<Static<typeof ScalingSchema> | null>({ ...ScalingSchema, nullable: true });

const POLICY_KEYS = [
  'minInstances',
  'maxInstances',
  'buffer',
  'idleTiers',
  'savegame',
  'scaleUp',
  'scaleDown',
  'releaseWhenEmptyFor',
  'releaseWhenEmptyForMs',
] as const;
const REPLACED = { warmBuffer: 'use buffer: {count: N} (and/or percent: P)' };

/** Parses and checks a `scaling` value; throws VALIDATION_FAILED naming the field (`scaling.idleTiers[1].after: …`). */
export function parseScalingPolicy(input: unknown, path = 'scaling'): ScalingPolicy {
  const f = objectAt(input, path);
  onlyKnownKeys(f, path, POLICY_KEYS, REPLACED);
  const minInstances =
    f.minInstances === undefined ? SCALING_DEFAULTS.minInstances : intAt(f.minInstances, `${path}.minInstances`, 0, MAX_INSTANCES);
  const policy: ScalingPolicy = {
    minInstances,
    buffer: parseBuffer(f.buffer, `${path}.buffer`),
    savegame: parseSavegame(f.savegame, `${path}.savegame`),
  };
  if (f.idleTiers !== undefined) policy.idleTiers = parseIdleTiers(f.idleTiers, `${path}.idleTiers`);
  if (f.maxInstances !== undefined) {
    policy.maxInstances = intAt(f.maxInstances, `${path}.maxInstances`, 0, MAX_INSTANCES);
    if (minInstances > policy.maxInstances)
      throw invalid(`${path}.minInstances`, `must not exceed maxInstances (${minInstances} > ${policy.maxInstances})`);
  }
  if (f.scaleUp !== undefined) policy.scaleUp = parseScaleUp(f.scaleUp, `${path}.scaleUp`);
  if (f.scaleDown !== undefined) {
    const d = objectAt(f.scaleDown, `${path}.scaleDown`);
    onlyKnownKeys(d, `${path}.scaleDown`, ['whenEmptyFor', 'whenEmptyForMs']);
    const empty = durationAt(d, 'whenEmptyFor', `${path}.scaleDown`, 1);
    if (!empty) throw invalid(`${path}.scaleDown.whenEmptyFor`, 'is required (a duration such as "10m")');
    policy.scaleDown = { whenEmptyFor: empty.text, whenEmptyForMs: empty.ms };
  }
  const release = durationAt(f, 'releaseWhenEmptyFor', path, 1);
  if (release) {
    policy.releaseWhenEmptyFor = release.text;
    policy.releaseWhenEmptyForMs = release.ms;
  }
  return policy;
}

function parseBuffer(value: unknown, path: string): BufferPolicy {
  if (value === undefined) return {};
  const b = objectAt(value, path);
  onlyKnownKeys(b, path, ['count', 'percent']);
  const out: BufferPolicy = {};
  if (b.count !== undefined) out.count = intAt(b.count, `${path}.count`, 0, MAX_INSTANCES);
  if (b.percent !== undefined) out.percent = intAt(b.percent, `${path}.percent`, 0, 99);
  return out;
}

function parseSavegame(value: unknown, path: string): SavegamePolicy {
  if (value === undefined) return { mode: SCALING_DEFAULTS.savegameMode };
  const s = objectAt(value, path);
  onlyKnownKeys(s, path, ['mode', 'retention', 'retentionMs']);
  const mode = oneOf(s.mode, `${path}.mode`, ['discard', 'archive'] as const);
  const retention = durationAt(s, 'retention', path, 1);
  if (!retention) return { mode };
  if (mode === 'discard') throw invalid(`${path}.retention`, 'only applies to mode archive (a discarded world is not kept at all)');
  return { mode, retention: retention.text, retentionMs: retention.ms };
}

function parseScaleUp(value: unknown, path: string): ScaleUpRule {
  const u = objectAt(value, path);
  onlyKnownKeys(u, path, ['whenFillAbove', 'step', 'cooldown', 'cooldownMs']);
  const fill = u.whenFillAbove;
  if (typeof fill !== 'number' || !Number.isFinite(fill) || fill <= 0 || fill > 1) {
    throw invalid(`${path}.whenFillAbove`, `must be a ratio above 0 and at most 1, e.g. 0.8 (got ${JSON.stringify(fill)})`);
  }
  const step = u.step === undefined ? SCALING_DEFAULTS.scaleUpStep : intAt(u.step, `${path}.step`, 1, 1000);
  const cooldown = durationAt(
    u.cooldown === undefined && u.cooldownMs === undefined ? { cooldown: SCALING_DEFAULTS.scaleUpCooldown } : u,
    'cooldown',
    path,
    0,
  );
  return { whenFillAbove: fill, step, cooldown: cooldown!.text, cooldownMs: cooldown!.ms };
}

/**
 * Parses idle tiers (a group's, or one instance's override): `after` strictly
 * increasing, each action at most once, in the order pause < stop < archive.
 */
export function parseIdleTiers(input: unknown, path = 'idleTiers'): IdleTier[] {
  if (!Array.isArray(input)) throw invalid(path, 'must be an array of {after, action}');
  if (input.length > IDLE_ACTIONS.length)
    throw invalid(path, `has ${input.length} tiers; at most ${IDLE_ACTIONS.length} (pause, stop, archive, each once)`);
  const tiers: IdleTier[] = [];
  const short = path.slice(path.lastIndexOf('.') + 1);
  input.forEach((raw, i) => {
    const at = `${path}[${i}]`;
    const t = objectAt(raw, at);
    if (t.after === undefined && t.afterMs !== undefined)
      throw invalid(`${at}.afterMs`, 'was replaced: use after, a duration such as "10m"');
    onlyKnownKeys(t, at, ['after', 'afterMs', 'action']);
    if (t.action === 'delete')
      throw invalid(
        `${at}.action`,
        'delete was replaced: use archive (the container is removed; savegame.mode decides whether the world is kept)',
      );
    const action = oneOf(t.action, `${at}.action`, IDLE_ACTIONS);
    const after = durationAt(t, 'after', at, 1);
    if (!after) throw invalid(`${at}.after`, 'is required (a duration such as "10m")');
    const prev = tiers[i - 1];
    if (prev) {
      if (after.ms <= prev.afterMs) throw invalid(`${at}.after`, `must be longer than ${short}[${i - 1}] (${prev.after})`);
      if (prev.action === action)
        throw invalid(`${at}.action`, `${action} is already ${short}[${i - 1}]'s action (each action at most once)`);
      if (ACTION_RANK[action] < ACTION_RANK[prev.action])
        throw invalid(`${at}.action`, `${action} cannot follow ${prev.action} (the order is pause, stop, archive)`);
    }
    tiers.push({ after: after.text, afterMs: after.ms, action });
  });
  return tiers;
}
