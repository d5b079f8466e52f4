// Versioned schema changes of the SQLite store, applied in order by Kysely's migrator.
import { sql } from 'kysely';
export const sqliteMigrations = {
    '001-initial': {
        async up(db) {
            // AUTOINCREMENT: ids are never reused, so a cursor can never skip over a recycled id.
            await sql `CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at INTEGER NOT NULL
      )`.execute(db);
            await sql `CREATE INDEX pets_status_id ON pets (status, id)`.execute(db);
            await sql `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      )`.execute(db);
            await sql `CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id INTEGER REFERENCES pets (id),
        created_at INTEGER NOT NULL,
        locked_until INTEGER,
        PRIMARY KEY (api_key_id, idempotency_key)
      )`.execute(db);
            await sql `CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`.execute(db);
        },
    },
};
//# sourceMappingURL=migrations.js.map