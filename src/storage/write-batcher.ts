/**
 * Group commit: writes submitted during one turn of the event loop are committed together, in one
 * transaction and one sync, and each caller's promise settles only after that commit. Under load
 * this turns N fsyncs into one without weakening what a resolved promise means.
 */
export class WriteBatcher<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = []
  private scheduled = false
  private readonly listeners: ((size: number) => void)[] = []

  constructor(private readonly commit: (items: T[]) => R[]) {}

  /** Writes waiting for the next commit. */
  get queued(): number {
    return this.queue.length
  }

  /** Calls the listener with the size of each batch committed from now on (for metrics). */
  onCommit(listener: (size: number) => void): void {
    this.listeners.push(listener)
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(this.flush)
      }
    })
  }

  /** Commits whatever is queued now; also called on close so that nothing queued is dropped. */
  readonly flush = (): void => {
    this.scheduled = false
    const batch = this.queue
    if (batch.length === 0) return
    this.queue = []
    let results: R[]
    try {
      results = this.commit(batch.map((b) => b.item))
    } catch (err) {
      for (const b of batch) b.reject(err)
      return
    }
    for (const [i, b] of batch.entries()) b.resolve(results[i]!)
    for (const listener of this.listeners) listener(batch.length)
  }
}
