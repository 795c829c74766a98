// Dynamic provisioning (docs/provisioning.md), pure: the scaling policy, the idle clock
// and tiers, buffer maths, the autoscaler, the allocation choice and where an
// archived world comes back.

export * from './scaling-policy.js';
export * from './idle.js';
export * from './idle-tiers.js';
export * from './buffer.js';
export * from './instance-choice.js';
export * from './autoscaler.js';
export * from './allocation.js';
export * from './host-moves.js';
export * from './unarchive.js';
