// Pterodactyl/Pelican eggs (PTDL_v1/v2, PLCN_v1/v2/v3) → a template body, pure, with
// the preview an operator reads before storing it: what was mapped, what has
// no equivalent (never dropped silently), unknown fields, or why it is refused.

import type { ConfigFileSpec, ConfigParser, InstallSpec } from '../domain/template.js';
import { CONFIG_PARSERS } from '../domain/template.js';
import type { TemplateBody } from '../contracts/catalog.js';
import { configKeyProblem } from './config-keys.js';
import { METADATA_FIELDS, eggFormat, imageEntries, knownFields, startupOf, type EggFormat } from './egg-formats.js';
import { importVariables, type EggFinding } from './egg-variables.js';
import { commandReferences, startupCommand, unknownStartupReferences } from './startup.js';
import { mapStop, type DeclaredRcon } from './stop.js';
import { EULA_VARIABLE, eggFeatures, eulaFile, eulaVariable } from './features.js';

export type { EggFormat } from './egg-formats.js';

export interface EggPreview {
  format: EggFormat | null;
  eggName: string | null;
  mapped: { from: string; to: string }[];
  untranslated: EggFinding[];
  unknownFields: string[];
  /** Set when the egg cannot be represented: nothing is stored. */
  refused?: string;
}

export interface EggImportOptions {
  /** Key (label) of `docker_images`, or any image reference; default the first of `docker_images`. */
  image?: string;
  memoryMb?: number;
  /** The server's RCON, when the operator declares it: the stop command goes over RCON instead of stdin. */
  rcon?: DeclaredRcon;
  installTimeoutMs?: number;
}

export const DEFAULT_EGG_MEMORY_MB = 1024;
export const DEFAULT_INSTALL_TIMEOUT_MS = 600_000;
/** Java servers take a while to print their done line; the tcp default (2 min) is too short for a first world. */
export const EGG_STARTUP_TIMEOUT_MS = 300_000;
/** What Wings gives every server and an egg's startup may use. */
export const BUILTIN_ENV = ['SERVER_MEMORY', 'SERVER_IP', 'SERVER_PORT', 'P_SERVER_LOCATION', 'P_SERVER_UUID', 'TZ'];

const CONFIG_FIELDS = ['files', 'startup', 'logs', 'stop', 'extends', 'file_denylist'];
const INSTALL_FIELDS = ['script', 'container', 'entrypoint', 'privileged', 'extends'];

class Refusal extends Error {}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** `config.files` and `config.startup` are JSON text in exports (objects in some hand-written eggs). */
function jsonField(v: unknown, field: string): Record<string, unknown> | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch (err) {
      throw new Refusal(`${field} is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || (Array.isArray(parsed) && parsed.length === 0)) return undefined;
    const o = obj(parsed);
    if (!o) throw new Refusal(`${field} must be a JSON object`);
    return o;
  }
  const o = obj(v);
  if (!o) throw new Refusal(`${field} must be an object`);
  return o;
}

/** The image: the egg's choice named by `key` (label or image), any other image reference given as `key`, or the first. */
function chooseImage(entries: [string, string][], key: string | undefined, p: EggPreview): string {
  if (entries.length === 0 && key === undefined)
    throw new Refusal('the egg names no docker image (docker_images is empty): give one with --image');
  const chosen = key === undefined ? entries[0] : entries.find(([k, img]) => k === key || img === key);
  const image = chosen ? chosen[1] : (key as string);
  if (!/^[^\s]+$/.test(image) || image.length > 512) throw new Refusal(`image "${image}" is not a valid image reference`);
  if (chosen) p.mapped.push({ from: `docker_images[${JSON.stringify(chosen[0])}]`, to: `image ${image}` });
  else
    p.mapped.push({
      from: '(import option image)',
      to: `image ${image}, which is not one of the egg's docker_images${entries.length > 0 ? ` (${entries.map(([k]) => k).join(', ')})` : ''}`,
    });
  if (entries.length > 0)
    p.mapped.push({
      from: 'docker_images',
      to: `images: all ${entries.length} choice(s) the egg offers, stored with the template (${entries.map(([k]) => k).join(', ')})`,
    });
  return image;
}

/** Pterodactyl's `java_version` feature (a prompt to pick another Java image when the server needs one) is the per-instance image choice here. */
function javaVersion(entries: [string, string][], p: EggPreview): void {
  const labels = entries.map(([k]) => k);
  if (labels.length > 1)
    p.mapped.push({
      from: 'features.java_version',
      to: `the image choice: pick one of ${labels.join(', ')} with image at creation (ectl instances create --image) or change it with an update`,
    });
  else
    p.untranslated.push({
      field: 'features.java_version',
      reason: `the egg offers ${labels.length === 0 ? 'no image' : 'one image'} (docker_images), so there is no Java version to choose`,
    });
}

/** The choices kept as `images`: each a label and an image reference the template field accepts (at most 64); the rest listed. */
function storedImages(entries: [string, string][], p: EggPreview): [string, string][] {
  const ok = entries.filter(([label, img], i) => {
    const why =
      label.length === 0 || label.length > 256
        ? 'its label is empty or longer than 256 characters'
        : !/^[^\s]+$/.test(img) || img.length > 512
          ? 'it is not an image reference'
          : i >= 64
            ? 'only 64 choices are kept'
            : undefined;
    if (why) p.untranslated.push({ field: `docker_images[${JSON.stringify(label)}]`, reason: `not kept in images: ${why}` });
    return why === undefined;
  });
  return ok;
}

function readiness(startup: Record<string, unknown> | undefined, p: EggPreview): TemplateBody['readiness'] {
  for (const key of Object.keys(startup ?? {}))
    if (key !== 'done') p.untranslated.push({ field: `config.startup.${key}`, reason: 'no equivalent (only "done" is read)' });
  const done = startup?.done;
  const list = (Array.isArray(done) ? done : done === undefined || done === null || done === '' ? [] : [done])
    .map(String)
    .filter((s) => s.length > 0);
  if (list.length === 0) {
    p.mapped.push({ from: 'config.startup', to: 'no done string: readiness is a TCP accept on the server port' });
    return { kind: 'tcp', startupTimeoutMs: EGG_STARTUP_TIMEOUT_MS };
  }
  const parts = list.map((s) => {
    if (!s.startsWith('regex:')) return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const re = s.slice('regex:'.length);
    try {
      new RegExp(re);
    } catch (err) {
      throw new Refusal(`config.startup.done ${s} does not compile: ${(err as Error).message}`);
    }
    return `(?:${re})`;
  });
  const pattern = parts.join('|');
  p.mapped.push({ from: 'config.startup.done', to: `readiness: a log line matching ${pattern}` });
  return { kind: 'log', pattern, startupTimeoutMs: EGG_STARTUP_TIMEOUT_MS };
}

function configFiles(files: Record<string, unknown> | undefined, p: EggPreview): ConfigFileSpec[] {
  const out: ConfigFileSpec[] = [];
  for (const [path, value] of Object.entries(files ?? {})) {
    const f = obj(value);
    const field = `config.files[${JSON.stringify(path)}]`;
    if (!f) throw new Refusal(`${field} is not an object`);
    for (const key of Object.keys(f)) if (key !== 'parser' && key !== 'find') p.unknownFields.push(`${field}.${key}`);
    const parser = String(f.parser ?? 'file');
    if (!(CONFIG_PARSERS as readonly string[]).includes(parser))
      throw new Refusal(`${field}.parser "${parser}" is not one of ${CONFIG_PARSERS.join(', ')}`);
    const find: ConfigFileSpec['find'] = {};
    for (const [key, raw] of Object.entries(obj(f.find) ?? {})) {
      const at = `${field}.find[${JSON.stringify(key)}]`;
      const value = findValue(raw);
      if (value === undefined) {
        p.untranslated.push({ field: at, reason: 'neither a value nor an object of old → new values; the key is not edited' });
        continue;
      }
      const problem = configKeyProblem(parser as ConfigParser, key, value);
      if (problem) {
        p.untranslated.push({ field: at, reason: `${problem}; the key is not edited` });
        continue;
      }
      find[key] = value;
    }
    if (Object.keys(find).length === 0) continue;
    out.push({ path, parser: parser as ConfigParser, find });
    p.mapped.push({ from: field, to: `${parser} edits before each start: ${Object.keys(find).join(', ')}` });
  }
  return out;
}

/** A `find` value: text (numbers and booleans as their text), or value matching (old → new, each as text). */
function findValue(raw: unknown): string | Record<string, string> | undefined {
  if (typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
  const o = obj(raw);
  if (!o || Object.keys(o).length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const [ifValue, v] of Object.entries(o)) {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return undefined;
    out[ifValue] = String(v);
  }
  return out;
}

function install(scripts: Record<string, unknown> | undefined, timeoutMs: number, p: EggPreview): InstallSpec | undefined {
  for (const key of Object.keys(scripts ?? {})) if (key !== 'installation') p.unknownFields.push(`scripts.${key}`);
  const inst = obj(scripts?.installation);
  if (!inst) return undefined;
  for (const key of Object.keys(inst)) if (!INSTALL_FIELDS.includes(key)) p.unknownFields.push(`scripts.installation.${key}`);
  const script = typeof inst.script === 'string' ? inst.script.replace(/\r\n/g, '\n') : '';
  if (script.trim() === '') return undefined;
  if (inst.extends !== undefined && inst.extends !== null)
    throw new Refusal("scripts.installation.extends copies another egg's script: import that egg's script instead");
  if (inst.privileged === true)
    p.untranslated.push({ field: 'scripts.installation.privileged', reason: 'install containers never run privileged here' });
  const image = typeof inst.container === 'string' ? inst.container.trim() : '';
  if (!/^[^\s]+$/.test(image)) throw new Refusal('scripts.installation.container names no image to run the script in');
  const entrypoint = typeof inst.entrypoint === 'string' && inst.entrypoint.trim() !== '' ? inst.entrypoint.trim() : 'bash';
  if (!/^[A-Za-z0-9_./-]+$/.test(entrypoint)) throw new Refusal(`scripts.installation.entrypoint "${entrypoint}" is not one program name`);
  p.mapped.push({
    from: 'scripts.installation',
    to: `install script run once at creation in ${image} (${entrypoint}), the instance directory at /mnt/server, bounded by ${timeoutMs} ms`,
  });
  return { image, entrypoint, script, timeoutMs };
}

/** Fields that describe the egg and carry no behaviour: listed as mapped to nothing, and `meta.update_url` / `icon` as untranslated. */
function metadata(egg: Record<string, unknown>, format: EggFormat, p: EggPreview): void {
  const present = METADATA_FIELDS.filter((f) => egg[f] !== undefined && egg[f] !== null);
  if (present.length > 0) p.mapped.push({ from: present.join(', '), to: 'egg metadata: shown here, not part of the template' });
  const updateUrl = obj(egg.meta)?.update_url ?? egg.update_url;
  if (typeof updateUrl === 'string' && updateUrl !== '')
    p.untranslated.push({
      field: 'meta.update_url',
      reason: 'the egg is not checked for updates here: import the new file as a new template version',
    });
  for (const key of Object.keys(obj(egg.meta) ?? {})) if (key !== 'version' && key !== 'update_url') p.unknownFields.push(`meta.${key}`);
  if (format === 'PLCN_v3')
    for (const key of ['icon', 'image'])
      if (egg[key] !== undefined && egg[key] !== null)
        p.untranslated.push({ field: key, reason: "the egg's icon for the panel; not used here" });
}

/** Parses an egg (the JSON or YAML text's value) into a template body and its preview. */
export function parseEgg(json: unknown, opts: EggImportOptions = {}): { template?: TemplateBody; preview: EggPreview } {
  const p: EggPreview = { format: null, eggName: null, mapped: [], untranslated: [], unknownFields: [] };
  try {
    const template = build(json, opts, p);
    return { template, preview: p };
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    p.refused = err.message;
    return { preview: p };
  }
}

function build(json: unknown, opts: EggImportOptions, p: EggPreview): TemplateBody {
  const egg = obj(json);
  if (!egg) throw new Refusal('an egg is a JSON object');
  const format = eggFormat(obj(egg.meta)?.version);
  if (!format.ok) throw new Refusal(format.reason);
  p.format = format.format;
  p.eggName = typeof egg.name === 'string' ? egg.name : null;
  p.mapped.push({ from: 'meta.version', to: `read as ${format.about}` });
  const fields = knownFields(format.format);
  for (const key of Object.keys(egg)) if (!fields.includes(key)) p.unknownFields.push(key);
  metadata(egg, format.format, p);
  const config = obj(egg.config) ?? {};
  for (const key of Object.keys(config)) if (!CONFIG_FIELDS.includes(key)) p.unknownFields.push(`config.${key}`);
  if (config.extends !== undefined && config.extends !== null)
    throw new Refusal('config.extends inherits the configuration of another egg, which is not part of this file');
  const images = imageEntries(egg, format.format);
  const features = eggFeatures(egg.features);
  p.mapped.push(...features.mapped);
  p.untranslated.push(...features.untranslated);
  if (features.javaVersion) javaVersion(images, p);
  // YAML exports write an empty list as `{}`.
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : Object.values(obj(v) ?? {}));
  const denylist = [...list(egg.file_denylist), ...list(config.file_denylist)].filter((f) => f !== '' && f !== null);
  const denied = denylist.filter((f): f is string => typeof f === 'string' && f.trim() !== '');
  if (denied.length !== denylist.length)
    p.untranslated.push({ field: 'file_denylist', reason: 'entries that are not path patterns (strings) are left out' });
  if (denied.length > 0)
    p.mapped.push({ from: 'file_denylist', to: `fileDenylist: the files API and SFTP refuse ${denied.length} pattern(s)` });
  else if (egg.file_denylist !== undefined) p.mapped.push({ from: 'file_denylist', to: 'empty: nothing to translate' });
  const logs = jsonField(config.logs, 'config.logs');
  if (logs && Object.keys(logs).length > 0)
    p.untranslated.push({ field: 'config.logs', reason: 'custom log files are not read (the container output is the log)' });

  const image = chooseImage(images, opts.image, p);
  const startupChoice = startupOf(egg, format.format);
  const scripts = obj(egg.scripts);
  const scriptText = [
    startupChoice.line,
    typeof obj(scripts?.installation)?.script === 'string' ? String(obj(scripts?.installation)?.script) : '',
  ].join('\n');
  const vars = importVariables(egg.variables, scriptText);
  p.mapped.push(...vars.mapped);
  p.untranslated.push(...vars.untranslated);
  p.unknownFields.push(...vars.unknownFields);
  if (vars.refused) throw new Refusal(vars.refused);

  const startup = startupChoice.line.replace(/\r\n/g, '\n').trim();
  for (const other of startupChoice.others)
    p.untranslated.push({
      field: `startup_commands[${JSON.stringify(other)}]`,
      reason: `another startup command the egg offers; only ${startupChoice.from} is used (a template has one command)`,
    });
  const command = startupCommand(startup);
  if (!command) throw new Refusal('startup is empty: the egg says nothing about how to start the server');
  const known = new Set([...vars.variables.map((v) => v.name), ...BUILTIN_ENV]);
  const missing = commandReferences(command.argv).filter((n) => !known.has(n));
  const shellRefs = command.shell
    ? [...startup.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)]
        .map((m) => (m[1] ?? m[2]) as string)
        .filter((n) => !known.has(n))
    : [];
  for (const ref of new Set(unknownStartupReferences(startup)))
    p.untranslated.push({
      field: startupChoice.from,
      reason: `refers to {{${ref}}}, which names nothing an instance has: the image's entrypoint is given it as it is`,
    });
  for (const n of new Set([...missing, ...shellRefs]))
    p.untranslated.push({
      field: startupChoice.from,
      reason: `refers to ${n}, which is neither an egg variable nor one of ${BUILTIN_ENV.join(', ')}: it is empty at start`,
    });
  p.mapped.push({
    from: startupChoice.from,
    to: `startup: given to the image's own entrypoint as STARTUP, {{VAR}} left for it to fill from the environment (as on Wings)${command.shell ? '; the line uses shell syntax, so the image needs the shell its entrypoint runs it with (bash on the Pterodactyl images)' : ''}; the server files at /home/container, the working directory`,
  });

  const stop = mapStop(typeof config.stop === 'string' ? config.stop : undefined, opts.rcon);
  if (!stop.ok) throw new Refusal(stop.reason);
  p.mapped.push({ from: 'config.stop', to: `stop: ${stop.note}` });
  if (stop.warning !== undefined) p.untranslated.push({ field: 'config.stop', reason: stop.warning });
  const ready = readiness(jsonField(config.startup, 'config.startup'), p);
  const files = configFiles(jsonField(config.files, 'config.files'), p);
  const inst = install(scripts, opts.installTimeoutMs ?? DEFAULT_INSTALL_TIMEOUT_MS, p);

  const body: TemplateBody = {
    image,
    variables: vars.variables as TemplateBody['variables'],
    resources: { memoryMb: opts.memoryMb ?? DEFAULT_EGG_MEMORY_MB },
    readiness: ready,
    stop: { signal: stop.signal, ...(stop.stdin !== undefined ? { stdin: stop.stdin } : {}), ...(stop.rcon ? { rcon: stop.rcon } : {}) },
    startup,
    stdin: true,
  };
  const choices = storedImages(images, p);
  if (choices.length > 0) body.images = Object.fromEntries(choices);
  if (features.eula) {
    // The operator's acceptance: a variable (unless the egg has its own EULA), and eula.txt from it before each start.
    const variables = (body.variables ??= []);
    if (!variables.some((v) => v.name === EULA_VARIABLE)) variables.push(eulaVariable() as NonNullable<TemplateBody['variables']>[number]);
    if (!files.some((f) => f.path === 'eula.txt')) files.push(eulaFile());
    body.eula = true;
  }
  if (files.length > 0) body.configFiles = files;
  if (inst) body.install = inst;
  if (denied.length > 0) body.fileDenylist = [...new Set(denied.map((f) => f.trim()))];
  p.mapped.push({
    from: '(no egg field)',
    to: `resources: ${body.resources.memoryMb} MB (SERVER_MEMORY); the container port is the template default (SERVER_PORT)`,
  });
  return body;
}
