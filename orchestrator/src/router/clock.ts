// The router's injected time source (the connection, wake coordinator and log
// limiter never read Date.now() themselves), so hold windows test in milliseconds.

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
