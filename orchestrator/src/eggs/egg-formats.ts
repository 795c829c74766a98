// The egg formats this importer reads, pure: Pterodactyl's PTDL_v1/v2 and
// Pelican's PLCN_v1/v2/v3, and what differs between them. Pelican's own
// importer reads PTDL_v2, PLCN_v1 and PLCN_v2 as one shape and only adds
// `startup_commands` in PLCN_v3, so the differences are few:
// - PTDL_v1: `images` (a list, or one `image`) instead of `docker_images`;
// - PLCN_v1: PTDL_v2 as Pelican exports it (rules as lists, `sort`);
// - PLCN_v2: adds `tags`, and Pelican exports it as YAML too (config as objects);
// - PLCN_v3: `startup_commands` (name → line) instead of `startup`, and `icon`.

export const EGG_FORMATS = ['PTDL_v1', 'PTDL_v2', 'PLCN_v1', 'PLCN_v2', 'PLCN_v3'] as const;
export type EggFormat = (typeof EGG_FORMATS)[number];

const COMMON_FIELDS = [
  '_comment',
  'meta',
  'exported_at',
  'name',
  'author',
  'uuid',
  'description',
  'features',
  'file_denylist',
  'config',
  'scripts',
  'variables',
  'update_url',
];
const FIELDS: Record<EggFormat, string[]> = {
  PTDL_v1: [...COMMON_FIELDS, 'images', 'image', 'startup'],
  PTDL_v2: [...COMMON_FIELDS, 'docker_images', 'startup', 'tags'],
  PLCN_v1: [...COMMON_FIELDS, 'docker_images', 'startup', 'tags'],
  PLCN_v2: [...COMMON_FIELDS, 'docker_images', 'startup', 'tags'],
  PLCN_v3: [...COMMON_FIELDS, 'docker_images', 'startup_commands', 'startup', 'tags', 'icon', 'image'],
};

const ABOUT: Record<EggFormat, string> = {
  PTDL_v1: 'Pterodactyl v1 (images as a list)',
  PTDL_v2: 'Pterodactyl v2',
  PLCN_v1: 'Pelican v1 (the PTDL_v2 shape)',
  PLCN_v2: 'Pelican v2 (the PTDL_v2 shape with tags; JSON or YAML)',
  PLCN_v3: 'Pelican v3 (startup_commands instead of startup)',
};

export type FormatCheck = { ok: true; format: EggFormat; about: string } | { ok: false; reason: string };

/** The format named by `meta.version`; anything else (a newer Pelican version too) is refused by name. */
export function eggFormat(version: unknown): FormatCheck {
  if ((EGG_FORMATS as readonly unknown[]).includes(version))
    return { ok: true, format: version as EggFormat, about: ABOUT[version as EggFormat] };
  const known = EGG_FORMATS.join(', ');
  const newer = typeof version === 'string' && /^(PLCN|PTDL)_v\d+$/i.test(version);
  return {
    ok: false,
    reason: `meta.version ${JSON.stringify(version ?? null)} is not a known egg format (${known})${newer ? ': a newer format than this importer reads; export the egg in one of those' : ''}`,
  };
}

export function knownFields(format: EggFormat): readonly string[] {
  return FIELDS[format];
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The image choices as [label, ref]: `docker_images` (label → image), PTDL_v1's `images` list or one `image`. */
export function imageEntries(egg: Record<string, unknown>, format: EggFormat): [string, string][] {
  const raw = format === 'PTDL_v1' ? (egg.images ?? (typeof egg.image === 'string' ? [egg.image] : undefined)) : egg.docker_images;
  if (Array.isArray(raw)) return raw.map((img) => [String(img), String(img)]);
  return Object.entries(obj(raw) ?? {}).map(([k, img]) => [k, String(img)]);
}

export interface StartupChoice {
  line: string;
  from: string;
  /** Other startup commands the egg offers (PLCN_v3), not used. */
  others: string[];
}

/** The startup line: `startup`, or in PLCN_v3 `startup_commands` ("Default" when it has one, else the first). */
export function startupOf(egg: Record<string, unknown>, format: EggFormat): StartupChoice {
  const commands = format === 'PLCN_v3' ? obj(egg.startup_commands) : undefined;
  if (!commands || Object.keys(commands).length === 0)
    return { line: typeof egg.startup === 'string' ? egg.startup : '', from: 'startup', others: [] };
  const names = Object.keys(commands);
  const name = names.includes('Default') ? 'Default' : (names[0] as string);
  const line = commands[name];
  return {
    line: typeof line === 'string' ? line : '',
    from: `startup_commands[${JSON.stringify(name)}]`,
    others: names.filter((n) => n !== name),
  };
}

/** Metadata fields: shown here, not part of a template. */
export const METADATA_FIELDS = ['name', 'author', 'uuid', 'description', 'tags', 'exported_at', '_comment'];
