// The control plane's domain types, re-exported from one place.

export * from './common.js';
export * from './host.js';
export * from './template.js';
export * from './scaling.js';
export * from './backup-policy.js';
export * from './group.js';
export * from './instance.js';
export * from './command.js';
export * from './auth.js';
export * from './session.js';
export * from './installation-request.js';
