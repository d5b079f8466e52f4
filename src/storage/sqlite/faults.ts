// Storage faults of the SQLite store: which SQLite errors mean "the disk or the file cannot serve
// now" (503 for the caller, not a bug), and whether the path still names the file that was opened.
import { rmSync, statSync } from 'node:fs'
import { StorageUnavailableError } from '../errors.js'

/** The code the writer thread reports when the path names another file than the store's. */
export const FILE_REPLACED = 'PETSTORE_FILE_REPLACED'
/** A write whose writer thread died holding it, committed or not: a retry with its key cures it. */
export const WRITER_DIED = 'PETSTORE_WRITER_DIED'

const REPLACED_MESSAGE = 'the database file was removed or replaced; restart the service'
const IO_MESSAGE = 'the database file cannot be read or written; retry later'

/** Codes (with their extended codes, e.g. SQLITE_IOERR_WRITE) that retrying later may cure. */
const MESSAGES: readonly (readonly [code: string, message: string])[] = [
  ['SQLITE_FULL', 'the database disk is full; retry later'],
  ['SQLITE_READONLY', 'the database is read-only; retry later'],
  ['SQLITE_IOERR', IO_MESSAGE],
  // The file system's own, from checking the file's identity.
  ['EIO', IO_MESSAGE],
  ['SQLITE_CANTOPEN', 'the database file cannot be opened; retry later'],
  ['SQLITE_BUSY', 'the database is locked by another connection; retry later'],
  [FILE_REPLACED, REPLACED_MESSAGE],
  [WRITER_DIED, 'the write was interrupted and may have been stored; retry later'],
]

/** Whether `err` carries the SQLite (or system) error `code` or one of its extended codes. */
export function hasCode(err: unknown, code: string): boolean {
  const own = (err as { code?: unknown } | null)?.code
  return typeof own === 'string' && (own === code || own.startsWith(`${code}_`))
}

/** A fault of the disk or file as a StorageUnavailableError (SQLite's message only as its cause). */
export function unavailableIfDiskFault(err: unknown): unknown {
  if (err instanceof StorageUnavailableError) return err
  const fault = MESSAGES.find(([prefix]) => hasCode(err, prefix))
  if (fault === undefined) return err
  // The code beside the message, so that the log tells e.g. a failed sync from a failed write.
  const { code } = err as { code: string }
  return Object.assign(new StorageUnavailableError(fault[1], 1, { cause: err }), { code })
}

/** The identity (device and inode) of the file at `path` now; null when nothing is there. */
export function identityAt(path: string): string | null {
  const stat = statSync(path, { bigint: true, throwIfNoEntry: false })
  return stat === undefined ? null : `${stat.dev}:${stat.ino}`
}

/** How often the path is checked to name the opened file, besides by ping and after each commit. */
const FILE_CHECK_MS = 1000

/**
 * Whether the path still names the file opened, and the last fault, which readiness probes until a
 * write succeeds. Connections write on to a file unlinked or renamed over, which a restart would
 * not find, so a write is acknowledged only while the path still names the file opened.
 */
export class StoreFaults {
  /** The file as opened; null in memory. */
  readonly file: { path: string; identity: string } | null = null
  /** The write-ahead log and its index as opened, which live as long as a connection does. */
  private readonly companions: [path: string, identity: string][] = []
  /** Set while the path does not name the opened file: what is read or written then is lost. */
  private fileFault: StorageUnavailableError | null = null
  /** The last fault of the disk or file since a write last succeeded. */
  private lastFailure: StorageUnavailableError | null = null
  private readonly fileCheck: NodeJS.Timeout | undefined

  /** `path`: the database file, opened just now; null in memory. */
  constructor(path: string | null) {
    if (path === null) return
    const identity = identityAt(path)
    if (identity === null) throw new Error('the database file vanished as it was opened')
    this.file = { path, identity }
    for (const companion of [`${path}-wal`, `${path}-shm`]) {
      const id = identityAt(companion)
      if (id !== null) this.companions.push([companion, id])
    }
    this.fileCheck = setInterval(() => this.checkFile(), FILE_CHECK_MS).unref()
  }

  /** Whether a fault has been seen since a write last succeeded. */
  get failing(): boolean {
    return this.lastFailure !== null
  }

  /** A write succeeded: the disk and the file serve again. */
  succeeded(): void {
    this.lastFailure = null
  }

  throwIfFileFault(): void {
    if (this.fileFault !== null) throw this.fileFault
  }

  /** Compares the path with the opened file now; the fault, if any, holds until it matches again. */
  checkFile(): StorageUnavailableError | null {
    if (this.file === null) return null
    try {
      const same = identityAt(this.file.path) === this.file.identity
      this.fileFault = same ? null : new StorageUnavailableError(REPLACED_MESSAGE)
    } catch (err) {
      this.fileFault = new StorageUnavailableError(IO_MESSAGE, 1, { cause: err })
    }
    return this.fileFault
  }

  /** A fault of the disk or file as StorageUnavailableError, remembered for readiness. */
  failed(err: unknown): unknown {
    const mapped = unavailableIfDiskFault(err)
    if (!(mapped instanceof StorageUnavailableError) || mapped === this.fileFault) return mapped
    // The writer thread found the file gone: reads stop now rather than at the next check.
    if ((err as { code?: unknown }).code === FILE_REPLACED) this.checkFile()
    else this.lastFailure = mapped
    return mapped
  }

  /** Runs `work` unless the file is gone; maps its faults. */
  guarded<T>(work: () => T): T {
    try {
      this.throwIfFileFault()
      return work()
    } catch (err) {
      throw this.failed(err)
    }
  }

  stop(): void {
    clearInterval(this.fileCheck)
  }

  /**
   * Once every connection is closed: the log of a file removed or replaced would be replayed into
   * whatever the path names next, so it and its index go, if they are still the ones opened.
   */
  removeCompanionsIfMoved(): void {
    try {
      if (this.file === null || identityAt(this.file.path) === this.file.identity) return
    } catch {
      return
    }
    for (const [path, identity] of this.companions) {
      try {
        if (identityAt(path) === identity) rmSync(path, { force: true })
      } catch {
        // Left as it is: a file system failing this way fails the next start too, which says so.
      }
    }
  }
}
