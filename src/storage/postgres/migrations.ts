// Versioned schema changes of the PostgreSQL store, applied in order by Kysely's migrator, which
// holds a PostgreSQL advisory lock while it runs, so instances starting together apply each once.
import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Ids must become visible in the order they are given, or a reader paging by id could pass an id
 * whose transaction commits later and never see that pet. Inserts (insert_pets) therefore take
 * this transaction-scoped advisory lock: id allocation and commit happen one transaction at a time
 * across every instance, and group commit keeps many pets in each of those transactions.
 */
export const PET_INSERT_LOCK = 0x70657473 // "pets"

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
  '003-insert-pets': {
    // A batch of creates in one statement, so one round trip: takes the insert lock (see
    // PET_INSERT_LOCK above), inserts the pets in the order given, completes the
    // idempotency claims of those that have one (null where none), and returns the new ids in
    // ascending order, which is the order given. Run outside a transaction, the statement is
    // its own, and the lock is held until it commits.
    async up(db: Kysely<unknown>) {
      await sql`CREATE FUNCTION insert_pets(
          names TEXT[], category_ids BIGINT[], statuses TEXT[], created BIGINT,
          claim_api_key_ids TEXT[], claim_keys TEXT[]
        ) RETURNS TABLE (id BIGINT) LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
          PERFORM pg_advisory_xact_lock(${sql.lit(PET_INSERT_LOCK)});
          RETURN QUERY
            WITH inserted AS (
              INSERT INTO pets (name, category_id, status, created_at)
              SELECT t.name, t.category_id, t.status, created
              FROM unnest(names, category_ids, statuses) WITH ORDINALITY
                AS t(name, category_id, status, ord)
              ORDER BY t.ord
              RETURNING pets.id
            ),
            numbered AS (SELECT i.id, row_number() OVER (ORDER BY i.id) AS ord FROM inserted i),
            completed AS (
              UPDATE idempotency_keys k SET pet_id = n.id, locked_until = NULL
              FROM numbered n
              JOIN unnest(claim_api_key_ids, claim_keys) WITH ORDINALITY
                AS c(api_key_id, idempotency_key, ord) ON c.ord = n.ord
              WHERE k.api_key_id = c.api_key_id AND k.idempotency_key = c.idempotency_key
            )
            SELECT n.id FROM numbered n ORDER BY n.id;
        END $$`.execute(db)
    },
  },
}
