// Shared TypeBox pieces of the orchestrator API schemas (the catalog's own live
// in contracts/catalog.ts, shared with ectl; re-exported here for the routes).

import { Type } from '@sinclair/typebox';
import { IdString } from '../../contracts/catalog.js';

export { EnvMap, EnvName, IdString, LayerRefSchema, ResourcesSchema, Sha256String, VersionString } from '../../contracts/catalog.js';
export const AgentIdString = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-z0-9][a-z0-9-]*$' });

export const IdParams = Type.Object({ id: IdString });
