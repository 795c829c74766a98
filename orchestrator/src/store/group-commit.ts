// Group commit for independent single-row writes that must be durable before
// their caller goes on (audit entries): the first write goes out at once;
// writes that arrive while a statement is on the wire wait for it and then go
// out together in one multi-row statement, so a burst pays one commit (one
// WAL flush on PostgreSQL) instead of one each. Nothing waits when idle.

interface Pending<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private queue: Pending<T, R>[] = [];
  private running: Promise<void> | undefined;

  /**
   * @param write writes the items in one statement (all or none) and
   *   answers one result per item, in the items' order; when a statement of
   *   several fails, each item is written again on its own, so only the
   *   items that fail by themselves are rejected.
   * @param maxBatch items per statement at most.
   */
  constructor(
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 256,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.running ??= this.drain();
    });
  }

  /** Resolves once every write submitted so far has finished. */
  async flushed(): Promise<void> {
    while (this.running) await this.running;
  }

  private settle(batch: Pending<T, R>[], results: R[]): void {
    if (results.length !== batch.length) throw new Error(`group commit: ${results.length} results for ${batch.length} writes`);
    batch.forEach((p, n) => p.resolve(results[n]!));
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          this.settle(batch, await this.write(batch.map((p) => p.item)));
        } catch (err) {
          if (batch.length === 1) batch[0]!.reject(err);
          // One bad item must not fail the others: each is tried on its own.
          else for (const p of batch) await this.write([p.item]).then((r) => this.settle([p], r), p.reject);
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
