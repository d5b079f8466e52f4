// Versioned schema changes of the PostgreSQL store, applied in order by Kysely's migrator, which
// holds a PostgreSQL advisory lock while it runs, so instances starting together apply each once.
import { type Kysely, type Migration, sql } from 'kysely'

export const postgresMigrations: Record<string, Migration> = {
  '001-initial': {
    async up(db: Kysely<unknown>) {
      await sql`CREATE TABLE pets (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name TEXT NOT NULL,
        category_id BIGINT NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at BIGINT NOT NULL
      )`.execute(db)
      await sql`CREATE INDEX pets_status_id ON pets (status, id)`.execute(db)
      await sql`CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash BYTEA NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT,
        revoked_at BIGINT
      )`.execute(db)
      await sql`CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id BIGINT REFERENCES pets (id),
        created_at BIGINT NOT NULL,
        locked_until BIGINT,
        PRIMARY KEY (api_key_id, idempotency_key)
      )`.execute(db)
      await sql`CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`.execute(
        db,
      )
    },
  },
  '002-data-version': {
    // Two numbers, one that every commit changing pets moves and one for API keys, whoever made
    // it: instances read them (one round trip per batch of requests) to know whether their
    // cached pages, pets and keys still hold. Moved by triggers, so no writer can forget them; a
    // row, not a sequence, so a reader sees a new number only once the commit that moved it is
    // visible. The function keeps the schema it was made in, whatever the session's search_path.
    async up(db: Kysely<unknown>) {
      await sql`CREATE TABLE data_version (
        singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
        pets BIGINT NOT NULL,
        api_keys BIGINT NOT NULL
      )`.execute(db)
      await sql`INSERT INTO data_version (pets, api_keys) VALUES (0, 0)`.execute(db)
      await sql`CREATE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
          IF TG_TABLE_NAME = 'pets' THEN
            UPDATE data_version SET pets = pets + 1;
          ELSE
            UPDATE data_version SET api_keys = api_keys + 1;
          END IF;
          RETURN NULL;
        END $$`.execute(db)
      for (const table of ['pets', 'api_keys']) {
        await sql`CREATE TRIGGER ${sql.raw(`${table}_data_version`)}
          AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${sql.table(table)}
          FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version()`.execute(db)
      }
    },
  },
}
