// The end of an event-loop turn, awaited by the routes' hooks: the data version is read once for
// every request that arrived in the turn, and the turn's answers are written together.
import type { Deadline } from '../storage/deadline.js'
import { readDataVersion, type Store, type VersionRead } from '../storage/store.js'

/**
 * By the end of the turn every request of the turn has been received, so any commit acknowledged
 * before one of them was sent is in the version read then: as exact as a read per request, at the
 * cost of one. Answers written together wake the client's side once per turn, not once per answer.
 */
export class Turn {
  private ended: Promise<void> | null = null
  private read: Promise<VersionRead> | null = null

  constructor(private readonly store: Store) {}

  /** Settles at the end of the current event-loop turn. */
  end(): Promise<void> {
    this.ended ??= new Promise((resolve) => {
      setImmediate(() => {
        this.ended = null
        this.read = null
        resolve()
      })
    })
    return this.ended
  }

  /** The data version as read at the end of the turn, within the turn's first `deadline`. */
  version(deadline: Deadline): Promise<VersionRead> {
    this.read ??= this.end().then(() => readDataVersion(this.store, deadline))
    return this.read
  }
}
