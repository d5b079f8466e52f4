/**
 * Group commit for a store whose commits are asynchronous (a database over the network): writes
 * submitted while a commit is in flight wait and go together in the next one, so under load one
 * transaction carries many writes, and each promise settles only when its own commit has.
 */
export class AsyncWriteBatcher<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = []
  private committing: Promise<void> | null = null
  private readonly listeners: ((size: number) => void)[] = []

  constructor(private readonly commit: (items: T[]) => Promise<R[]>) {}

  get queued(): number {
    return this.queue.length
  }

  onCommit(listener: (size: number) => void): void {
    this.listeners.push(listener)
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      this.committing ??= this.drain()
    })
  }

  /** Resolves when nothing is queued or in flight; for close. */
  async idle(): Promise<void> {
    while (this.committing) await this.committing
  }

  private async drain(): Promise<void> {
    // Let the requests that arrive in this turn of the event loop join the first batch.
    await new Promise((resolve) => setImmediate(resolve))
    while (this.queue.length > 0) {
      const batch = this.queue
      this.queue = []
      try {
        const results = await this.commit(batch.map((b) => b.item))
        for (const [i, b] of batch.entries()) b.resolve(results[i]!)
        for (const listener of this.listeners) listener(batch.length)
      } catch (err) {
        for (const b of batch) b.reject(err)
      }
    }
    this.committing = null
  }
}
