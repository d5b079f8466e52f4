// Reads of single pets for the routes and the fast lane: a turn's gets share one read transaction,
// kept open while the data version holds and until the callback that opened it returns, since
// opening one per lookup costs more than the lookup (docs/performance.md).
import type BetterSqlite3 from 'better-sqlite3'
import { Database } from './driver.js'
import { PET_BY_ID, type PetRow } from './pet-row.js'

/** Page cache: enough for the id tree's interior pages, which every lookup reads, not its leaves. */
const CACHE_KIB = 4096

/** A read-only connection of its own: its open transaction takes in no write, holds no other read. */
export class SnapshotReader {
  private readonly db: BetterSqlite3.Database
  private readonly begin: BetterSqlite3.Statement
  private readonly commit: BetterSqlite3.Statement
  private readonly petById: BetterSqlite3.Statement<[bigint], PetRow>
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
    this.petById = this.db.prepare<[bigint], PetRow>(PET_BY_ID).raw(true)
  }

  /**
   * The pet's row as of `version`, dataVersion().pets read just before: a snapshot taken after
   * that read is reused only while the version holds, so it is current.
   */
  petRow(id: bigint, version: number): PetRow | undefined {
    if (this.openAt !== version) {
      this.end()
      this.begin.run()
      this.openAt = version
      if (!this.endScheduled) {
        this.endScheduled = true
        queueMicrotask(this.endOfCallback)
      }
    }
    return this.petById.get(id)
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
