// The SQLite store's reads of pets: pages on the main connection, single pets also at a version.
import type Database from 'better-sqlite3'
import type { PetPageQuery } from '../store.js'
import { PET_BY_ID, type PetRow } from './pet-row.js'
import type { SnapshotReader } from './snapshot-reader.js'

const SELECT_PET = 'SELECT id, name, category_id, status FROM pets'

export class SqlitePetReads {
  private readonly firstPage
  private readonly pageAfter
  private readonly firstPageByStatus
  private readonly pageAfterByStatus
  private readonly byIdRow

  constructor(
    db: Database.Database,
    /** The fast lane's reads by id; without it, they run on the main connection. */
    private readonly reader: SnapshotReader | null,
  ) {
    this.firstPage = db.prepare<[number], PetRow>(`${SELECT_PET} ORDER BY id LIMIT ?`).raw(true)
    this.pageAfter = db
      .prepare<[bigint, number], PetRow>(`${SELECT_PET} WHERE id > ? ORDER BY id LIMIT ?`)
      .raw(true)
    this.firstPageByStatus = db
      .prepare<[string, number], PetRow>(`${SELECT_PET} WHERE status = ? ORDER BY id LIMIT ?`)
      .raw(true)
    this.pageAfterByStatus = db
      .prepare<[string, bigint, number], PetRow>(
        `${SELECT_PET} WHERE status = ? AND id > ? ORDER BY id LIMIT ?`,
      )
      .raw(true)
    this.byIdRow = db.prepare<[bigint], PetRow>(PET_BY_ID).raw(true)
  }

  page({ afterId, status, limit }: PetPageQuery): PetRow[] {
    if (status === null) {
      return afterId === null ? this.firstPage.all(limit) : this.pageAfter.all(afterId, limit)
    }
    return afterId === null
      ? this.firstPageByStatus.all(status, limit)
      : this.pageAfterByStatus.all(status, afterId, limit)
  }

  byId(id: bigint): PetRow | undefined {
    return this.byIdRow.get(id)
  }

  /** The pet's row as of `version` (dataVersion().pets read just before). */
  byIdAt(id: bigint, version: number): PetRow | undefined {
    return this.reader ? this.reader.petRow(id, version) : this.byIdRow.get(id)
  }
}
