// The audit trail's one writer: the HTTP audit hook (audit.ts) and the few
// handlers that record an entry of their own (transfers) append through it.

import type { AuditEvent } from '../../domain/index.js';
import type { Store } from '../../store/store.js';

export class AuditLog {
  constructor(private readonly store: Store) {}

  async append(entry: Omit<AuditEvent, 'id'>): Promise<void> {
    await this.store.audit.append(entry);
  }
}
