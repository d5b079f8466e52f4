import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Group commit for a store whose commits are asynchronous (a database over the network, SQLite's
 * writer thread): writes submitted while a commit is in flight wait and go together in the next
 * one, so under load one transaction carries many writes, and each promise settles only when its
 * own commit has.
 *
 * A batch is taken once a whole turn of the event loop has passed without a new write (or at
 * GATHER_LIMIT writes, or GATHER_MS after the batch began to gather), not as soon as the previous
 * commit ends. Why: the writes that were waiting when a commit ended are only some of the
 * clients; those whose answers that commit sent come back a moment later. Taken at once, the
 * batches alternate between those two groups, nearly two syncs where one would do; gathered
 * until the arrivals pause, batches are larger and a create costs less CPU (docs/performance.md).
 * An idle store pays two turns of the event loop, microseconds: a lone write finds the next turn
 * quiet.
 */
/** Past this many waiting writes a batch is taken without waiting for a quiet turn. */
export const GATHER_LIMIT = 256
/** Nor does a batch wait for a quiet turn longer than this once it has begun to gather. */
export const GATHER_MS = 2

/**
 * Calls a submitter's callback. One that throws (a bug: a promise's resolve never does) must not
 * keep the rest of its batch from settling, nor the batcher from draining: its error is thrown
 * again on its own, after, where the process's handler for uncaught errors sees it.
 */
function settle<V>(callback: (value: V) => void, value: V): void {
  try {
    callback(value)
  } catch (err) {
    queueMicrotask(() => {
      throw err
    })
  }
}

export class AsyncWriteBatcher<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = []
  private committing: Promise<void> | null = null
  private readonly listeners: ((size: number) => void)[] = []

  /** `gatherMs` other than GATHER_MS only in tests, where a busy machine must not end a gather. */
  constructor(
    private readonly commit: (items: T[]) => Promise<R[]>,
    private readonly gatherMs = GATHER_MS,
  ) {}

  get queued(): number {
    return this.queue.length
  }

  onCommit(listener: (size: number) => void): void {
    this.listeners.push(listener)
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => this.submitThen(item, resolve, reject))
  }

  /**
   * submit for a caller that takes callbacks, which must not throw: one of them is called once
   * the item's commit has settled. Why: the HTTP hot path's create otherwise paid for four
   * promises per create (this one, the service's async function, its then and its catch).
   */
  submitThen(item: T, resolve: (r: R) => void, reject: (e: unknown) => void): void {
    this.queue.push({ item, resolve, reject })
    this.committing ??= this.drain()
  }

  /** Resolves when nothing is queued or in flight; for close. */
  async idle(): Promise<void> {
    while (this.committing) await this.committing
  }

  /**
   * Waits to the end of this turn of the event loop, then for as long as each further turn (with
   * its poll phase, where requests are read) brings a new write, up to the limits.
   */
  private async gather(): Promise<void> {
    const started = performance.now()
    await nextTurn()
    for (;;) {
      if (this.queue.length >= GATHER_LIMIT || performance.now() - started >= this.gatherMs) return
      const seen = this.queue.length
      await nextTurn()
      if (this.queue.length === seen) return
    }
  }

  private async drain(): Promise<void> {
    for (;;) {
      await this.gather()
      if (this.queue.length === 0) break
      const batch = this.queue
      this.queue = []
      let results: R[]
      try {
        results = await this.commit(batch.map((b) => b.item))
      } catch (err) {
        for (const b of batch) settle(b.reject, err)
        continue
      }
      for (const [i, b] of batch.entries()) settle(b.resolve, results[i]!)
      for (const listener of this.listeners) listener(batch.length)
    }
    this.committing = null
  }
}
