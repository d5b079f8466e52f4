// The SQLite store's data version, which moves whenever anyone commits: this connection, the writer
// thread, another process such as `petstore keys revoke`.
import type Database from 'better-sqlite3'
import type { WalIndexVersion } from './wal-index-version.js'

export class SqliteDataVersion {
  /** Commits made through the main connection, which its own data_version does not count. */
  private ownCommits = 0
  private readonly pragma

  constructor(
    db: Database.Database,
    /** The version from the file's WAL index; without it, from PRAGMA data_version. */
    private readonly walIndex: WalIndexVersion | null,
  ) {
    this.pragma = db.prepare<[], number>('PRAGMA data_version').pluck().safeIntegers(false)
  }

  /** Counts a commit made on the main connection. */
  committed(): void {
    this.ownCommits++
  }

  current(): number {
    return this.walIndex !== null ? this.walIndex.current() : this.pragma.get()! + this.ownCommits
  }

  close(): void {
    this.walIndex?.close()
  }
}
