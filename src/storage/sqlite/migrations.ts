// Versioned schema changes of the SQLite store, applied in order by Kysely's migrator.
import type Database from 'better-sqlite3'
import { Kysely, type Migration, Migrator, SqliteDialect, sql } from 'kysely'
import {
  type ColumnTypes,
  createInitialSchema,
  createPetsIndex,
  createPetsTable,
} from '../initial-schema.js'

const SQLITE_TYPES: ColumnTypes = {
  // AUTOINCREMENT: ids are never reused, so a cursor can never skip over a recycled id.
  petId: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  integer: 'INTEGER',
  bytes: 'BLOB',
}

/** The rule of `status IN (...)` (a NULL passes both) without its temporary b-tree for every row. */
const STATUS_COMPARISONS = "status = 'available' OR status = 'pending' OR status = 'sold'"

export const sqliteMigrations: Record<string, Migration> = {
  '001-initial': { up: (db: Kysely<unknown>) => createInitialSchema(db, SQLITE_TYPES) },
  '002-pets-status-check-as-comparisons': {
    // SQLite cannot change a CHECK in place: the table is rebuilt (lang_altertable.html#otheralter)
    // with foreign keys off (runSqliteMigrations), so they are checked before the commit.
    async up(db: Kysely<unknown>) {
      await createPetsTable(db, SQLITE_TYPES, 'pets_new', STATUS_COMPARISONS)
      await sql`INSERT INTO pets_new (id, name, category_id, status, created_at)
        SELECT id, name, category_id, status, created_at FROM pets ORDER BY id`.execute(db)
      // AUTOINCREMENT's counter may be past the highest id left: it moves to pets_new before DROP
      // TABLE deletes the counter of pets, and RENAME carries it back.
      await sql`DELETE FROM sqlite_sequence WHERE name = 'pets_new'`.execute(db)
      await sql`UPDATE sqlite_sequence SET name = 'pets_new' WHERE name = 'pets'`.execute(db)
      await sql`DROP TABLE pets`.execute(db)
      await sql`ALTER TABLE pets_new RENAME TO pets`.execute(db)
      await createPetsIndex(db)
      const { rows } = await sql`PRAGMA foreign_key_check`.execute(db)
      if (rows.length > 0) {
        throw new Error(`rebuilding pets would leave ${rows.length} broken foreign keys`)
      }
    },
  },
  '003-idempotency-claim-token': {
    // Which claim of a key a create completes, or a release frees (store.ts IdempotencyClaimRef).
    async up(db: Kysely<unknown>) {
      await sql`ALTER TABLE idempotency_keys ADD COLUMN claim_token TEXT`.execute(db)
    },
  },
}

/**
 * Brings the database schema up to date; several processes may do it at once on one file. Kysely's
 * SQLite migrator assumes one process: here it runs in one transaction that takes the write lock
 * before reading which migrations are applied, so another process waits, then skips them.
 */
export async function runSqliteMigrations(database: Database.Database): Promise<string[]> {
  // The dialect closes its database when Kysely is destroyed; the caller keeps using this one.
  const keepOpen = { close() {}, prepare: (text: string) => database.prepare(text) }
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: keepOpen }) })
  // Off while migrations run, as SQLite's procedure for rebuilding a table wants (002 drops pets,
  // which idempotency_keys refers to); a migration that could break a key checks them itself.
  // Set outside the transaction: inside one, SQLite ignores it.
  const foreignKeys = database.pragma('foreign_keys', { simple: true })
  database.pragma('foreign_keys = OFF')
  try {
    database.exec('BEGIN IMMEDIATE')
    const migrator = new Migrator({ db, provider: { getMigrations: async () => sqliteMigrations } })
    const result = await migrator.migrateToLatest()
    if (result.error) throw result.error
    database.exec('COMMIT')
    return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
  } finally {
    if (database.inTransaction) database.exec('ROLLBACK')
    await db.destroy()
    database.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`)
  }
}
