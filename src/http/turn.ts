// The end of an event-loop turn, for the routes and the fast lane: the data version is read once
// for every request that arrived in the turn, and the turn's answers are written together. A
// request's database deadline starts as it asks for the version, its first wait on the database.
import type { Deadline } from '../storage/deadline.js'
import { StorageUnavailableError } from '../storage/errors.js'
import {
  type DataVersion,
  readDataVersion,
  type Store,
  type VersionRead,
} from '../storage/store.js'

/**
 * What a request learns at the end of its turn: the version (undefined: use nothing cached) and
 * its deadline; or that the database cannot answer, which is then its answer (503).
 */
export type VersionThen = (
  version: DataVersion | undefined,
  deadline: Deadline,
  unavailable: StorageUnavailableError | null,
) => void

/**
 * Why at the end of the turn: by then every request of the turn has been received, so any commit
 * acknowledged before one of them was sent is in the version read, as exact as a read per request
 * at the cost of one. Answers written together wake the client side of the path once.
 */
export class Turn {
  private reads: VersionThen[] = []
  private deadlines: Deadline[] = []
  private writes: (() => void)[] = []
  private scheduled = false
  private readonly end = () => this.endOfTurn()

  constructor(
    private readonly store: Store,
    /** PETSTORE_DATABASE_TIMEOUT: a request's waits on the database, all of them together. */
    private readonly databaseTimeoutMs: number,
  ) {}

  /** Runs `then` (which must not throw) at the end of the turn with the version read then. */
  withVersion(then: VersionThen): void {
    this.reads.push(then)
    this.deadlines.push(performance.now() + this.databaseTimeoutMs)
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
      const deadlines = this.deadlines
      this.reads = []
      this.deadlines = []
      // The turn's first request has the earliest deadline.
      readDataVersion(this.store, deadlines[0]).then((v) => runAll(reads, deadlines, v))
    }
    this.scheduled = false
    const writes = this.writes
    this.writes = []
    for (const write of writes) write()
  }
}

function runAll(reads: VersionThen[], deadlines: Deadline[], read: VersionRead): void {
  const unavailable = read instanceof StorageUnavailableError ? read : null
  const version = unavailable === null ? (read as DataVersion | undefined) : undefined
  for (let i = 0; i < reads.length; i++) reads[i]!(version, deadlines[i]!, unavailable)
}
