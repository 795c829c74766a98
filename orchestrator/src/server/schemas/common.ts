// Shared TypeBox pieces of the orchestrator API schemas (the catalog's own live
// in contracts/catalog.ts, shared with ectl; the pieces routes use are re-exported here).

import { Type } from '@sinclair/typebox';
import { IdString } from '../../contracts/catalog.js';

export { IdString, Sha256String } from '../../contracts/catalog.js';
export const AgentIdString = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-z0-9][a-z0-9-]*$' });

export const IdParams = Type.Object({ id: IdString });
