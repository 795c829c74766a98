// An egg's `features` (Pterodactyl's console helpers): `eula` becomes an explicit
// acceptance by the operator — a variable EULA, false until set true, without
// which every start is refused, and eula.txt written (eula=true) before each
// start — and the others are listed as untranslated with what stands in for them.

import type { ConfigFileSpec, VariableSpec } from '../domain/template.js';
import { AppError } from '../shared/errors.js';
import type { EggFinding } from './egg-variables.js';

/** The variable that holds the operator's acceptance (env `EULA`, as the itzg images read it too). */
export const EULA_VARIABLE = 'EULA';
const EULA_URL = 'https://aka.ms/MinecraftEULA';

/** What stands in for Pterodactyl's other features (each a prompt the panel shows when the console prints a known line). */
const UNTRANSLATED: Readonly<Record<string, string>> = {
  pid_limit:
    "Pterodactyl's notice when the server hits the process limit: game and install containers run with a 512-process limit here (docs/eggs.md)",
  steam_disk_space:
    "Pterodactyl's notice when SteamCMD runs out of disk space: there is no disk quota here, the server directory has its host's disk",
  gsl_token: "Pterodactyl's prompt for a Steam Game Server Login Token: set the egg's token variable instead",
};

export interface EggFeatureMapping {
  eula: boolean;
  /** The egg has `java_version`: parse-egg.ts maps it to the image choice (docker_images). */
  javaVersion: boolean;
  mapped: { from: string; to: string }[];
  untranslated: EggFinding[];
}

export function eggFeatures(raw: unknown): EggFeatureMapping {
  const out: EggFeatureMapping = { eula: false, javaVersion: false, mapped: [], untranslated: [] };
  // YAML exports write an empty list as `{}`.
  const list = Array.isArray(raw) ? raw : typeof raw === 'object' && raw !== null ? Object.values(raw) : [];
  for (const f of list.map(String)) {
    if (f === 'eula') {
      out.eula = true;
      out.mapped.push({
        from: 'features.eula',
        to: `the Minecraft EULA needs the operator's acceptance: variable ${EULA_VARIABLE} (false until set true; ectl instances create --accept-eula); starts are refused without it, and eula.txt gets eula=true before each start`,
      });
    } else if (f === 'java_version') {
      out.javaVersion = true;
    } else {
      out.untranslated.push({
        field: `features.${f}`,
        reason: UNTRANSLATED[f] ?? 'a panel feature (an interactive prompt in Pterodactyl) with no equivalent here',
      });
    }
  }
  return out;
}

/** The acceptance variable an egg with `eula` gets (unless it has its own EULA variable). */
export function eulaVariable(): VariableSpec {
  return {
    name: EULA_VARIABLE,
    type: 'enum',
    env: EULA_VARIABLE,
    default: 'false',
    required: true,
    description: `Accept the Minecraft EULA (${EULA_URL}): true lets the server start`,
    validation: { values: ['true', 'false'] },
    booleanValues: { true: 'true', false: 'false' },
  };
}

/** eula.txt, written before each start from the variable (a start is refused unless it is true). */
export function eulaFile(): ConfigFileSpec {
  return { path: 'eula.txt', parser: 'properties', find: { eula: `{{env.${EULA_VARIABLE}}}` } };
}

/**
 * Refuses a start of a template with `eula` unless the instance's EULA value (its
 * setting, or a variant env entry that overrides it) is true, saying how to accept.
 */
export function assertEulaAccepted(
  template: { eula?: boolean } | undefined,
  env: Readonly<Record<string, string>>,
  instanceName: string,
): void {
  if (template?.eula !== true) return;
  if ((env[EULA_VARIABLE] ?? '').trim().toLowerCase() === 'true') return;
  throw new AppError(
    'EULA_NOT_ACCEPTED',
    `instance ${instanceName} runs a Minecraft server that needs the Minecraft EULA (${EULA_URL}) accepted before it starts: set ${EULA_VARIABLE}=true (\`ectl instances settings set ${instanceName} ${EULA_VARIABLE}=true\`, or \`ectl instances create … --accept-eula\`, or settings.${EULA_VARIABLE}: true in the create body), then start it`,
    {
      details: { variable: EULA_VARIABLE },
    },
  );
}
