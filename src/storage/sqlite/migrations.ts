// Versioned schema changes of the SQLite store, applied in order by Kysely's migrator.
import { type Kysely, type Migration, sql } from 'kysely'

export const sqliteMigrations: Record<string, Migration> = {
  '001-initial': {
    async up(db: Kysely<unknown>) {
      // AUTOINCREMENT: ids are never reused, so a cursor can never skip over a recycled id.
      await sql`CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at INTEGER NOT NULL
      )`.execute(db)
      await sql`CREATE INDEX pets_status_id ON pets (status, id)`.execute(db)
      await sql`CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      )`.execute(db)
      await sql`CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id INTEGER REFERENCES pets (id),
        created_at INTEGER NOT NULL,
        locked_until INTEGER,
        PRIMARY KEY (api_key_id, idempotency_key)
      )`.execute(db)
      await sql`CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`.execute(
        db,
      )
    },
  },
  '002-pets-status-check-as-comparisons': {
    // The CHECK on status as three comparisons instead of `status IN (...)`: SQLite evaluates an
    // IN list of three or more values in a CHECK by building a temporary b-tree of the values
    // (OpenEphemeral) for every row written, a large share of the writer thread's work per create
    // (docs/performance.md).
    // The comparisons accept and refuse exactly the same values (a NULL passes both).
    //
    // SQLite cannot change a CHECK in place, so the table is rebuilt and renamed, the procedure of
    // https://www.sqlite.org/lang_altertable.html#otheralter. The migrator runs this with foreign
    // keys off (idempotency_keys.pet_id refers to pets, which is dropped for a moment), so they
    // are checked here before the commit. It runs once, in time that grows with the table
    // (docs/performance.md).
    async up(db: Kysely<unknown>) {
      await sql`CREATE TABLE pets_new (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status = 'available' OR status = 'pending' OR status = 'sold'),
        created_at INTEGER NOT NULL
      )`.execute(db)
      await sql`INSERT INTO pets_new (id, name, category_id, status, created_at)
        SELECT id, name, category_id, status, created_at FROM pets ORDER BY id`.execute(db)
      // AUTOINCREMENT's counter may be past the highest id left; ids are never reused, so the new
      // table takes the old counter over (DROP TABLE deletes the counter of the name it drops,
      // RENAME renames the counter of the name it renames).
      await sql`DELETE FROM sqlite_sequence WHERE name = 'pets_new'`.execute(db)
      await sql`UPDATE sqlite_sequence SET name = 'pets_new' WHERE name = 'pets'`.execute(db)
      await sql`DROP TABLE pets`.execute(db)
      await sql`ALTER TABLE pets_new RENAME TO pets`.execute(db)
      await sql`CREATE INDEX pets_status_id ON pets (status, id)`.execute(db)
      const { rows } = await sql`PRAGMA foreign_key_check`.execute(db)
      if (rows.length > 0) {
        throw new Error(`rebuilding pets would leave ${rows.length} broken foreign keys`)
      }
    },
  },
}
