// The pure catalog rules moved to contracts/catalog-rules.ts (shared with ectl); kept for existing imports.

export { DEFAULT_CONTAINER_PORT, DEFAULT_READINESS, DEFAULT_STOP_TIMEOUT_MS, normalizeGroup, normalizeTemplate, valueProblem, type NormalizedGroup } from '../../contracts/catalog-rules.js';
