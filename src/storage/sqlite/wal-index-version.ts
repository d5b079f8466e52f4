// The store's data version read straight from SQLite's WAL index (the `-shm` file next to the
// database), with one pread of 48 bytes instead of `PRAGMA data_version`.
//
// Why: the version is read on every request (it decides whether cached pages and keys still
// hold), and the pragma opens a read transaction, with its fcntl locks and an fstat, where one
// pread costs much less (docs/performance.md).
//
// Why it is exact: every commit, by any connection of any process, rewrites the WAL-index header
// before the commit returns (https://sqlite.org/walformat.html, "The WAL-Index Header"): its
// change counter, frame count and checksums move, and after a WAL reset its salts do. The header
// layout is fixed because processes running different SQLite versions share one `-shm` file. A
// read that races a commit and sees a half-written header only counts as one change too many.
// The file lives as long as a connection to the database is open, and this store keeps its own
// open until it closes; a database that is not in WAL mode has no such file, and then the caller
// falls back to the pragma (`open` returns null).
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

  /** A number that moves whenever a commit has happened since the previous call. */
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
