// Dynamic provisioning (seed 003), pure: the scaling policy, the idle clock
// and tiers, buffer maths, the autoscaler and the allocation choice.

export * from './scaling-policy.js';
export * from './idle.js';
export * from './buffer.js';
export * from './host-order.js';
export * from './autoscaler.js';
export * from './allocation.js';
export * from './host-moves.js';
