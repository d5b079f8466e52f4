// The end of an event-loop turn, for both doors: the data version is read once for every request
// that arrived in the turn, and the turn's answers are written together.
import { type DataVersion, readDataVersion, type Store } from '../storage/store.js'

/**
 * Why at the end of the turn: by then every request of the turn has been received, so any commit
 * acknowledged before one of them was sent is in the version read, as exact as a read per request
 * at the cost of one. Answers written together wake the client side of the path once.
 */
export class Turn {
  private reads: ((version: DataVersion | undefined) => void)[] = []
  private writes: (() => void)[] = []
  private scheduled = false
  private readonly end = () => this.endOfTurn()

  constructor(private readonly store: Store) {}

  /** Runs `then` (which must not throw) at the end of the turn with the version read then. */
  withVersion(then: (version: DataVersion | undefined) => void): void {
    this.reads.push(then)
    this.schedule()
  }

  /** Runs `write` (which must not throw) at the end of the turn, with the turn's other answers. */
  write(write: () => void): void {
    this.writes.push(write)
    this.schedule()
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(this.end)
  }

  private endOfTurn(): void {
    if (this.reads.length > 0) {
      const reads = this.reads
      this.reads = []
      const version = readDataVersion(this.store)
      if (version instanceof Promise) version.then((v) => runAll(reads, v))
      else runAll(reads, version)
    }
    // Cleared only now: the answers the reads just queued go out below, not a turn later.
    this.scheduled = false
    const writes = this.writes
    this.writes = []
    for (const write of writes) write()
  }
}

function runAll(
  reads: ((version: DataVersion | undefined) => void)[],
  version: DataVersion | undefined,
): void {
  for (const read of reads) read(version)
}
