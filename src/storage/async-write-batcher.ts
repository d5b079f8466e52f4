import { setImmediate as nextTurn } from 'node:timers/promises'

/** Past this many waiting writes a batch is taken without waiting for a quiet turn. */
export const GATHER_LIMIT = 256
/** Nor does a batch wait for a quiet turn longer than this once it has begun to gather. */
export const GATHER_MS = 2

/**
 * Group commit for a store whose commits are asynchronous: writes submitted while a commit is in
 * flight go together in the next one, and each promise settles once its own commit has. A commit
 * may refuse single items (an Error in an item's place) while it writes the others.
 */
export class AsyncWriteBatcher<T, R> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = []
  private committing: Promise<void> | null = null
  private readonly listeners: ((size: number) => void)[] = []

  /** `gatherMs` other than GATHER_MS only in tests, where a busy machine must not end a gather. */
  constructor(
    private readonly commit: (items: T[]) => Promise<(R | Error)[]>,
    private readonly gatherMs = GATHER_MS,
  ) {}

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

  /**
   * Waits until a turn of the event loop (whose poll phase reads requests) brings no new write, up
   * to the limits: the clients a commit just answered come back a moment later, and join it.
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
      let results: (R | Error)[]
      try {
        results = await this.commit(batch.map((b) => b.item))
      } catch (err) {
        for (const b of batch) b.reject(err)
        continue
      }
      for (const [i, b] of batch.entries()) {
        const result = results[i]!
        if (result instanceof Error) b.reject(result)
        else b.resolve(result)
      }
      for (const listener of this.listeners) listener(batch.length)
    }
    this.committing = null
  }
}
