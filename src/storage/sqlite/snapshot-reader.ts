// The hot path's reads of single pets (as their JSON), on a read-only connection of their own that
// keeps one read transaction open for as long as the data version it was opened at holds, and at
// most until the callback that opened it returns (the microtask checkpoint after it): the hot path
// answers a turn's gets together in one callback at the end of the turn.
//
// Why: a statement run outside a transaction opens and closes a read transaction of its own, and
// in WAL mode that is a shared lock, a read mark in the WAL index and their release, most of the
// cost of a lookup by id (docs/performance.md). Under load a turn answers several gets, and they
// share one.
//
// Why it reads what a fresh transaction would: the caller passes the data version it read just
// before (WalIndexVersion, which moves with every commit of any connection of any process), and
// the transaction is reused only while that version is the one it was opened at. The version was
// read before the transaction's first statement took its snapshot, so while the version stays the
// same, nothing has been committed since it was read, and the snapshot is the current data.
//
// Why a connection of its own: a transaction left open on the main connection would take in the
// writes run there (keys, idempotency claims) and defer their commit. This one cannot write.
import type BetterSqlite3 from 'better-sqlite3'
import { Database } from './driver.js'
import { PET_JSON_BY_ID } from './pet-row.js'

/**
 * Page cache of this connection. Random lookups by id over a large catalogue would fill SQLite's
 * default (16 MB in better-sqlite3's build) with leaf pages it seldom reads again; the interior
 * pages of the id tree, which every lookup reads, fit many times over.
 */
const CACHE_KIB = 4096

export class SnapshotReader {
  private readonly db: BetterSqlite3.Database
  private readonly begin: BetterSqlite3.Statement
  private readonly commit: BetterSqlite3.Statement
  private readonly petJsonById: BetterSqlite3.Statement<[bigint], string>
  /** The version the open transaction was opened at; null when none is open. */
  private openAt: number | null = null
  private endScheduled = false
  private readonly endOfCallback = () => {
    this.endScheduled = false
    this.end()
  }

  constructor(path: string) {
    this.db = new Database(path, { readonly: true, fileMustExist: true })
    this.db.pragma('busy_timeout = 5000')
    this.db.pragma(`cache_size = -${CACHE_KIB}`)
    this.db.defaultSafeIntegers(true)
    this.begin = this.db.prepare('BEGIN')
    this.commit = this.db.prepare('COMMIT')
    this.petJsonById = this.db.prepare<[bigint], string>(PET_JSON_BY_ID).pluck()
  }

  /** The pet's JSON (PET_JSON_BY_ID) as of `version`, dataVersion().pets read just before. */
  petJson(id: bigint, version: number): string | undefined {
    if (this.openAt !== version) {
      this.end()
      this.begin.run()
      this.openAt = version
      if (!this.endScheduled) {
        this.endScheduled = true
        queueMicrotask(this.endOfCallback)
      }
    }
    return this.petJsonById.get(id)
  }

  /** Ends the open transaction, if any: the next read takes a new snapshot. */
  end(): void {
    this.openAt = null
    if (this.db.inTransaction) this.commit.run()
  }

  close(): void {
    this.end()
    this.db.close()
  }
}
