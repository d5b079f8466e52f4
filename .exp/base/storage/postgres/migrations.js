// Versioned schema changes of the PostgreSQL store, applied in order by Kysely's migrator, which
// holds a PostgreSQL advisory lock while it runs, so instances starting together apply each once.
import { sql } from 'kysely';
export const postgresMigrations = {
    '001-initial': {
        async up(db) {
            await sql `CREATE TABLE pets (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name TEXT NOT NULL,
        category_id BIGINT NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at BIGINT NOT NULL
      )`.execute(db);
            await sql `CREATE INDEX pets_status_id ON pets (status, id)`.execute(db);
            await sql `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash BYTEA NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT,
        revoked_at BIGINT
      )`.execute(db);
            await sql `CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id BIGINT REFERENCES pets (id),
        created_at BIGINT NOT NULL,
        locked_until BIGINT,
        PRIMARY KEY (api_key_id, idempotency_key)
      )`.execute(db);
            await sql `CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`.execute(db);
        },
    },
};
//# sourceMappingURL=migrations.js.map