// The store's data version, read on every request, from SQLite's WAL index (the `-shm` file) with
// one pread, where `PRAGMA data_version` opens a read transaction (docs/performance.md).
import { closeSync, openSync, readSync } from 'node:fs'
import { endianness } from 'node:os'

/** `iVersion` of a WAL-index header (WALINDEX_MAX_VERSION); any other value: not understood. */
const WALINDEX_VERSION = 3007000
const HEADER_BYTES = 48
/** Offset of `isInit`, 1 once a connection has built the index. */
const IS_INIT = 12

export class WalIndexVersion {
  private readonly read = Buffer.alloc(HEADER_BYTES)
  private readonly seen = Buffer.alloc(HEADER_BYTES)
  private version = 0

  private constructor(private fd: number | null) {}

  /** Opens `<database>-shm`; null when there is none or its header is not one this code knows. */
  static open(databasePath: string): WalIndexVersion | null {
    let fd: number
    try {
      fd = openSync(`${databasePath}-shm`, 'r')
    } catch {
      return null
    }
    const v = new WalIndexVersion(fd)
    const n = readSync(fd, v.read, 0, HEADER_BYTES, 0)
    const iVersion = endianness() === 'LE' ? v.read.readUInt32LE(0) : v.read.readUInt32BE(0)
    if (n !== HEADER_BYTES || iVersion !== WALINDEX_VERSION || v.read[IS_INIT] !== 1) {
      v.close()
      return null
    }
    v.read.copy(v.seen)
    return v
  }

  /**
   * A number that moves whenever a commit happened since the previous call: every commit rewrites
   * the header (sqlite.org/walformat.html), and a torn read only counts one change too many.
   */
  current(): number {
    if (this.fd === null) throw new Error('the WAL index is closed')
    readSync(this.fd, this.read, 0, HEADER_BYTES, 0)
    if (!this.read.equals(this.seen)) {
      this.read.copy(this.seen)
      this.version++
    }
    return this.version
  }

  close(): void {
    if (this.fd === null) return
    closeSync(this.fd)
    this.fd = null
  }
}
