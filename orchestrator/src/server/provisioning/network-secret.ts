// The network's shared secret (docs/provisioning.md "Network secret and template
// caps"): generated once, at the first start — never a default — and kept in the
// store's system settings, sealed with the secret key, outside every template. It reaches a container only in the create body sent
// to its host, for templates that declare `networkSecret.env`; it is never in
// an instance record, its history, revisions, logs or an API answer.

import { randomBytes } from 'node:crypto';
import type { TemplateSpec } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';

const KEY = 'network-secret';

export class NetworkSecret {
  private value: Promise<string> | undefined;

  constructor(private readonly deps: { store: Store; clock: Clock; generate?: () => string }) {}

  /** The secret, generated and stored on first use (concurrent first calls share one). */
  get(): Promise<string> {
    this.value ??= this.load().catch((err: unknown) => {
      this.value = undefined;
      throw err;
    });
    return this.value;
  }

  private async load(): Promise<string> {
    const { store, clock } = this.deps;
    const existing = await store.system.get(KEY);
    if (typeof existing === 'string' && existing.length >= 32) return existing;
    const secret = (this.deps.generate ?? (() => randomBytes(32).toString('base64url')))();
    await store.system.put(KEY, secret, clock.now());
    return secret;
  }
}

/** The create-body option for a template: the secret only when the template declares where it goes. */
export async function networkSecretFor(
  template: TemplateSpec | undefined,
  source: { get(): Promise<string> } | undefined,
): Promise<{ networkSecret?: string }> {
  return template?.networkSecret && source ? { networkSecret: await source.get() } : {};
}
