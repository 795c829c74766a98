// Request schemas of templates and groups. Structural rules live here; the
// cross-field rules (secrets, defaults vs types, references) in catalog-rules.ts.

import { Type, type Static } from '@sinclair/typebox';
import { CONFIG_PARSERS } from '../../domain/template.js';
import { NullableScalingSchema } from '../../provisioning/scaling-policy.js';
import { EnvMap, EnvName, IdString, LayerRefSchema, ResourcesSchema, VersionString } from './common.js';

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
    type: Type.Union([Type.Literal('string'), Type.Literal('integer'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('enum')]),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    env: Type.Optional(EnvName),
    // Unknown, not a union: with coerceTypes a union would turn 10 into "10"; catalog-rules checks the type.
    default: Type.Optional(Type.Unknown()),
    required: Type.Optional(Type.Boolean()),
    secret: Type.Optional(Type.Boolean()),
    validation: Type.Optional(Validation),
    apply: Type.Optional(Type.Union([Type.Literal('immediate'), Type.Literal('restart_required')])),
    operatorOnly: Type.Optional(Type.Boolean()),
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
    find: Type.Record(Type.String({ minLength: 1, maxLength: 512 }), Type.String({ maxLength: 4096 }), { minProperties: 1, maxProperties: 256 }),
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
    backup: Type.Optional(
      Type.Object(
        {
          onlineSave: Type.Optional(Type.Boolean()),
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
    labels: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 64 })),
    caps: Type.Optional(Type.Object({ maxInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) }, { additionalProperties: false })),
    networkSecret: Type.Optional(Type.Object({ env: EnvName }, { additionalProperties: false })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 256 })),
    stdin: Type.Optional(Type.Boolean()),
    install: Type.Optional(Install),
    configFiles: Type.Optional(Type.Array(ConfigFile, { maxItems: 64 })),
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
    caps: Type.Optional(Type.Object({ maxInstances: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) }, { additionalProperties: false })),
    variants: Type.Array(VariantSchema, { minItems: 1, maxItems: 64 }),
    // Structure only; parseScalingPolicy (provisioning) applies the rules and names the field it refuses.
    scaling: Type.Optional(NullableScalingSchema),
  },
  { additionalProperties: false },
);
export type GroupBody = Static<typeof GroupBody>;
