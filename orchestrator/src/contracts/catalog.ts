// Request schemas of templates and groups, shared by the server's routes and
// ectl's dry-run (pure: no server code). Structural rules live here; the
// cross-field rules (secrets, defaults vs types, references) in catalog-rules.ts.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { CONFIG_PARSERS } from '../domain/template.js';
import { NullableIdleTiersSchema, NullableScalingSchema } from '../provisioning/scaling-policy.js';
import { NullableBackupPolicySchema } from './backup-policy.js';
import { MAX_CAP_ADD } from '../shared/capabilities.js';
import { EnvName, IdString, Sha256String, VersionString } from './public-api/common.js';

// The identifier pieces are the public API contract's (contracts/public-api/common.ts).
export { EnvName, IdString, Sha256String, VersionString };
export const EnvMap = Type.Record(EnvName, Type.String({ maxLength: 32_768 }), { maxProperties: 512 });
export const LayerRefSchema = Type.Object({ id: IdString, checksum: Sha256String }, { additionalProperties: false });
export const ResourcesSchema = Type.Object(
  {
    // `description` doubles as the expectation in dry-run messages ("must be an integer number of MiB").
    memoryMb: Type.Integer({ minimum: 16, maximum: 1024 * 1024, description: 'an integer number of MiB' }),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024, description: 'a number of CPUs' })),
  },
  { additionalProperties: false },
);

const Validation = Type.Object(
  {
    pattern: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    min: Type.Optional(Type.Number()),
    max: Type.Optional(Type.Number()),
    minLength: Type.Optional(Type.Integer({ minimum: 0 })),
    maxLength: Type.Optional(Type.Integer({ minimum: 0 })),
    values: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { minItems: 1, maxItems: 256 })),
  },
  { additionalProperties: false },
);

const Variable = Type.Object(
  {
    name: EnvName,
    type: Type.Union([
      Type.Literal('string'),
      Type.Literal('integer'),
      Type.Literal('number'),
      Type.Literal('boolean'),
      Type.Literal('enum'),
    ]),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    env: Type.Optional(EnvName),
    // Unknown, not a union: with coerceTypes a union would turn 10 into "10"; catalog-rules checks the type.
    default: Type.Optional(Type.Unknown()),
    required: Type.Optional(Type.Boolean()),
    secret: Type.Optional(Type.Boolean()),
    validation: Type.Optional(Validation),
    apply: Type.Optional(Type.Union([Type.Literal('immediate'), Type.Literal('restart_required')])),
    operatorOnly: Type.Optional(Type.Boolean()),
    hidden: Type.Optional(Type.Boolean({ description: 'value shown to operators only (egg user_viewable: false)' })),
    booleanValues: Type.Optional(
      Type.Object(
        { true: Type.String({ minLength: 1, maxLength: 64 }), false: Type.String({ minLength: 1, maxLength: 64 }) },
        {
          additionalProperties: false,
          description: "an egg boolean: true/false/1/0 given are stored as these two values (the enum's values)",
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const Stop = Type.Object(
  {
    signal: Type.Optional(Type.String({ pattern: '^SIG[A-Z0-9]+$', maxLength: 16 })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
    rcon: Type.Optional(
      Type.Object(
        {
          port: Type.Integer({ minimum: 1, maximum: 65535 }),
          passwordVariable: EnvName,
          command: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
        },
        { additionalProperties: false },
      ),
    ),
    stdin: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false },
);

const Install = Type.Object(
  {
    image: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
    entrypoint: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_./-]+$' }),
    script: Type.String({ minLength: 1, maxLength: 262_144 }),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 7_200_000 })),
  },
  { additionalProperties: false },
);

const ConfigFile = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 1024 }),
    parser: Type.Union(CONFIG_PARSERS.map((p) => Type.Literal(p))),
    find: Type.Record(
      Type.String({ minLength: 1, maxLength: 512 }),
      Type.Union([
        Type.String({ maxLength: 4096 }),
        // Value matching: old value (or `regex:RE`) → new value; only a value that fits is replaced.
        Type.Record(Type.String({ minLength: 1, maxLength: 1024 }), Type.String({ maxLength: 4096 }), {
          minProperties: 1,
          maxProperties: 16,
        }),
      ]),
      { minProperties: 1, maxProperties: 256 },
    ),
  },
  { additionalProperties: false },
);

export const TemplateBody = Type.Object(
  {
    image: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
    env: Type.Optional(EnvMap),
    variables: Type.Optional(Type.Array(Variable, { maxItems: 256 })),
    resources: ResourcesSchema,
    containerPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    // Checked field by field by the lifecycle's validateReadinessSpec (named errors).
    readiness: Type.Optional(Type.Object({}, { additionalProperties: true })),
    stop: Type.Optional(Stop),
    dataPaths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 256 })),
    technicalPaths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 256 })),
    /** Path patterns the files API and SFTP refuse (gitignore-like; `!` allows again). */
    fileDenylist: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 256 })),
    backup: Type.Optional(
      Type.Object(
        {
          onlineSave: Type.Optional(Type.Boolean()),
          onFailure: Type.Optional(
            Type.Union([Type.Literal('abort_stop'), Type.Literal('stop_without_backup'), Type.Literal('force_stop_after_timeout')], {
              description: 'what an automatic stop (idle tier) does when its backup fails; default abort_stop (the world keeps running)',
            }),
          ),
          paths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 256 })),
        },
        { additionalProperties: false },
      ),
    ),
    crashLoop: Type.Optional(
      Type.Object(
        {
          maxExits: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
          windowMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 86_400_000 })),
          backoffInitialMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
          backoffMaxMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    layers: Type.Optional(Type.Array(LayerRefSchema, { maxItems: 64 })),
    restartPolicy: Type.Optional(Type.Union([Type.Literal('never'), Type.Literal('on-failure'), Type.Literal('always')])),
    user: Type.Optional(Type.Object({}, { additionalProperties: true })),
    labels: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 64 }),
    ),
    caps: Type.Optional(
      Type.Object({ maxInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) }, { additionalProperties: false }),
    ),
    networkSecret: Type.Optional(Type.Object({ env: EnvName }, { additionalProperties: false })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 256 })),
    startup: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 16384,
        description: "Wings' runtime: the line the image's entrypoint reads as STARTUP; the files at /home/container",
      }),
    ),
    stdin: Type.Optional(Type.Boolean()),
    install: Type.Optional(Install),
    eula: Type.Optional(
      Type.Boolean({ description: "starts are refused until the instance's EULA variable is true (an egg's eula feature)" }),
    ),
    configFiles: Type.Optional(Type.Array(ConfigFile, { maxItems: 64 })),
    // Structure only; the catalog rules name an unknown capability.
    security: Type.Optional(
      Type.Object(
        {
          capAdd: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
              maxItems: MAX_CAP_ADD,
              description: 'Linux capabilities added back to the game container, which drops all (e.g. ["CHOWN", "SETUID", "SETGID"])',
            }),
          ),
          readOnlyRootfs: Type.Optional(
            Type.Boolean({
              description: 'false: the image writes outside its data directory and /tmp (default true: read-only root filesystem)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    images: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }), {
        maxProperties: 64,
        description: 'the image choices an egg offers (label → image); an instance picks one at creation (image) or by an update',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TemplateBody = Static<typeof TemplateBody>;

export const TemplateParams = Type.Object({ name: IdString, version: VersionString });
export type TemplateParams = Static<typeof TemplateParams>;

const VariantSchema = Type.Object(
  {
    id: IdString,
    template: Type.Object({ name: IdString, version: VersionString }, { additionalProperties: false }),
    extraLayers: Type.Optional(Type.Array(LayerRefSchema, { maxItems: 64 })),
    resources: Type.Optional(ResourcesSchema),
    env: Type.Optional(EnvMap),
  },
  { additionalProperties: false },
);

export const GroupBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('persistent'), Type.Literal('ephemeral')]),
    placement: Type.Optional(Type.Union([Type.Literal('packed'), Type.Literal('distributed')])),
    caps: Type.Optional(
      Type.Object({ maxInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) }, { additionalProperties: false }),
    ),
    variants: Type.Array(VariantSchema, { minItems: 1, maxItems: 64 }),
    // Structure only; parseScalingPolicy (provisioning) applies the rules and names the field it refuses.
    scaling: Type.Optional(NullableScalingSchema),
    // How the group's worlds sleep when empty; absent or null: the system's default; []: never.
    idleTiers: Type.Optional(NullableIdleTiersSchema),
    // Structure only; parseBackupPolicy checks the cron expression and names the field.
    backup: Type.Optional(NullableBackupPolicySchema),
  },
  { additionalProperties: false },
);
export type GroupBody = Static<typeof GroupBody>;

// ---------------------------------------------------------------- validation shared with ectl

/** One refusal: the dotted field inside the body (`resources.memoryMb`) and what is wrong. */
export interface BodyProblem {
  field: string;
  message: string;
}

function got(value: unknown): string {
  return value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
}

function expectation(schema: TSchema, fallback: string): string {
  return typeof schema.description === 'string' && /^(a|an) /.test(schema.description) ? schema.description : fallback;
}

function dotted(path: string): string {
  return (
    path
      .split('/')
      .filter(Boolean)
      .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
      .join('')
      .replace(/^\./, '') || '(root)'
  );
}

/**
 * Every structural refusal of `body` against `schema` (TemplateBody, GroupBody),
 * one per field, worded for people. Strict JSON types: a quoted number is
 * refused (YAML `"1536"` is a string, which the HTTP layer would only coerce).
 */
export function bodyProblems(schema: TSchema, body: unknown): BodyProblem[] {
  const out = new Map<string, string>();
  for (const e of Value.Errors(schema, body)) {
    const field = dotted(e.path);
    if (out.has(field)) continue;
    const s = e.schema as TSchema & {
      minimum?: number;
      maximum?: number;
      exclusiveMinimum?: number;
      minLength?: number;
      maxLength?: number;
      pattern?: string;
    };
    let message: string;
    switch (e.type) {
      case ValueErrorType.ObjectAdditionalProperties:
        message = `is not a field here${closest(e.path, schemaAt(schema, e.path))}`;
        break;
      case ValueErrorType.ObjectRequiredProperty:
        message = `is required${typeof s.description === 'string' ? ` (${s.description})` : ''}`;
        break;
      case ValueErrorType.Integer:
        message = `must be ${expectation(s, 'an integer')}${got(e.value)}`;
        break;
      case ValueErrorType.Number:
        message = `must be ${expectation(s, 'a number')}${got(e.value)}`;
        break;
      case ValueErrorType.String:
        message = `must be a string${got(e.value)}`;
        break;
      case ValueErrorType.Boolean:
        message = `must be true or false${got(e.value)}`;
        break;
      case ValueErrorType.IntegerMinimum:
      case ValueErrorType.NumberMinimum:
        message = `must be at least ${s.minimum}${got(e.value)}`;
        break;
      case ValueErrorType.IntegerMaximum:
      case ValueErrorType.NumberMaximum:
        message = `must be at most ${s.maximum}${got(e.value)}`;
        break;
      case ValueErrorType.NumberExclusiveMinimum:
        message = `must be more than ${s.exclusiveMinimum}${got(e.value)}`;
        break;
      case ValueErrorType.StringPattern:
        message = `must match ${s.pattern}${got(e.value)}`;
        break;
      case ValueErrorType.Union: {
        const literals = ((s as { anyOf?: { const?: unknown }[] }).anyOf ?? []).map((a) => a.const).filter((c) => c !== undefined);
        message =
          literals.length > 0 ? `must be one of ${literals.join(', ')}${got(e.value)}` : `${e.message.toLowerCase()}${got(e.value)}`;
        break;
      }
      default:
        message = `${e.message.replace(/^Expected/, 'must be').toLowerCase()}${got(e.value)}`;
    }
    out.set(field, message);
  }
  return [...out].map(([field, message]) => ({ field, message }));
}

/** The object schema that holds the property at `path` (for "did you mean"). */
function schemaAt(schema: TSchema, path: string): TSchema | undefined {
  type Node = { properties?: Record<string, Node>; items?: Node; anyOf?: Node[] };
  let at: Node | undefined = schema as Node;
  for (const part of path.split('/').filter(Boolean).slice(0, -1)) {
    if (!at) return undefined;
    const next: Node | undefined = /^\d+$/.test(part) && at.items ? at.items : at.properties?.[part];
    at = next?.anyOf ? next.anyOf.find((a) => a.properties) : next;
  }
  return at as TSchema | undefined;
}

function closest(path: string, parent: TSchema | undefined): string {
  const name = path.split('/').pop() ?? '';
  const known = Object.keys((parent as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
  const match = known.find((k) => k.toLowerCase() === name.toLowerCase()) ?? known.find((k) => k.startsWith(name) || name.startsWith(k));
  return match ? ` (did you mean ${match}?)` : known.length > 0 ? ` (known: ${known.join(', ')})` : '';
}
