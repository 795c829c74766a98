// The catalog schemas moved to contracts/catalog.ts (shared with ectl); kept for existing imports.

export { GroupBody, TemplateBody, TemplateParams } from '../../contracts/catalog.js';
