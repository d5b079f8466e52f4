// What the SQLite store knows of its file's and disk's faults: whether the path still names the
// opened file, and the last failure of the disk, which readiness probes until a write succeeds.
import { StorageUnavailableError } from '../errors.js'
import { type DatabaseFile, FILE_REPLACED, unavailableIfDiskFault } from './faults.js'

/** How often the path is checked to name the opened file, besides by ping and after each commit. */
const FILE_CHECK_MS = 1000

export class StoreFaults {
  /** Set while the path does not name the opened file: what is read or written then is lost. */
  private fileFault: StorageUnavailableError | null = null
  /** The last fault of the disk or file since a write last succeeded. */
  private lastFailure: StorageUnavailableError | null = null
  private readonly fileCheck: NodeJS.Timeout | null = null

  /** `file` as opened; null in memory. */
  constructor(private readonly file: DatabaseFile | null) {
    if (file !== null) this.fileCheck = setInterval(() => this.checkFile(), FILE_CHECK_MS).unref()
  }

  get fileGone(): boolean {
    return this.fileFault !== null
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
    if (this.file !== null) this.fileFault = this.file.check()
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
    if (this.fileCheck !== null) clearInterval(this.fileCheck)
  }
}
