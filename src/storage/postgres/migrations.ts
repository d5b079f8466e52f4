// Versioned schema changes of the PostgreSQL store, applied in order by Kysely's migrator, whose
// advisory lock makes instances starting together apply each once.
import { type Kysely, type Migration, sql } from 'kysely'
import { type ColumnTypes, createInitialSchema } from '../initial-schema.js'

/**
 * Taken by every insert (insert_pets) until its commit, so ids become visible in the order given
 * and a reader paging by id never passes one that commits later; group commit keeps it cheap.
 */
export const PET_INSERT_LOCK = 0x70657473 // "pets"

const POSTGRES_TYPES: ColumnTypes = {
  petId: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
  integer: 'BIGINT',
  bytes: 'BYTEA',
}

export const postgresMigrations: Record<string, Migration> = {
  '001-initial': { up: (db: Kysely<unknown>) => createInitialSchema(db, POSTGRES_TYPES) },
  '002-data-version': {
    // Numbers that commits to pets and to api_keys move, telling instances whether their caches
    // hold. Triggers, so no writer forgets them; a row, seen only once its commit is visible.
    async up(db: Kysely<unknown>) {
      await sql`CREATE TABLE data_version (
        singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
        pets BIGINT NOT NULL,
        api_keys BIGINT NOT NULL
      )`.execute(db)
      await sql`INSERT INTO data_version (pets, api_keys) VALUES (0, 0)`.execute(db)
      // SET search_path FROM CURRENT: the function keeps its schema whatever the session's path.
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
    // A batch of creates and the idempotency claims they complete (null where none) in one round
    // trip, under PET_INSERT_LOCK; the ids come back ascending, in the order given.
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
  '004-insert-pets-lock-wait': {
    // insert_pets with a bound on its lock waits: a statement timeout cannot be set for one
    // statement without a transaction around it, nor passed at connect through a pooler, and a
    // create whose caller gave up must not go on waiting and then commit. The six-argument form
    // stays for instances not yet upgraded.
    async up(db: Kysely<unknown>) {
      await sql`CREATE FUNCTION insert_pets(
          names TEXT[], category_ids BIGINT[], statuses TEXT[], created BIGINT,
          claim_api_key_ids TEXT[], claim_keys TEXT[], lock_wait_ms BIGINT
        ) RETURNS TABLE (id BIGINT) LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
          PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
          RETURN QUERY SELECT i.id FROM insert_pets(
            names, category_ids, statuses, created, claim_api_key_ids, claim_keys) i;
        END $$`.execute(db)
    },
  },
  '005-idempotency-claim-token': {
    // Creates complete only the claim they were made under (store.ts IdempotencyClaimRef), and
    // never commit past the caller's deadline. Claims are locked first, so a release waits for
    // the create's commit or finds the claim free to delete, never a pet about to be added.
    async up(db: Kysely<unknown>) {
      await sql`ALTER TABLE idempotency_keys ADD COLUMN claim_token TEXT`.execute(db)
      await sql`CREATE FUNCTION insert_pets(
          names TEXT[], category_ids BIGINT[], statuses TEXT[], created BIGINT,
          claim_api_key_ids TEXT[], claim_keys TEXT[], claim_tokens TEXT[],
          lock_wait_ms BIGINT, deadline_ms BIGINT
        ) RETURNS TABLE (id BIGINT) LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
          PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
          PERFORM pg_advisory_xact_lock(${sql.lit(PET_INSERT_LOCK)});
          RETURN QUERY
            WITH items AS (
              SELECT * FROM unnest(names, category_ids, statuses, claim_api_key_ids, claim_keys)
                WITH ORDINALITY AS t(name, category_id, status, api_key_id, idempotency_key, ord)
            ),
            held AS (
              SELECT c.ord FROM idempotency_keys k
              JOIN unnest(claim_api_key_ids, claim_keys, claim_tokens) WITH ORDINALITY
                AS c(api_key_id, idempotency_key, token, ord)
                ON k.api_key_id = c.api_key_id AND k.idempotency_key = c.idempotency_key
              WHERE k.pet_id IS NULL AND k.claim_token = c.token
              FOR UPDATE OF k
            ),
            kept AS (
              SELECT i.*, row_number() OVER (ORDER BY i.ord) AS n FROM items i
              WHERE i.api_key_id IS NULL OR i.ord IN (SELECT h.ord FROM held h)
            ),
            inserted AS (
              INSERT INTO pets (name, category_id, status, created_at)
              SELECT k.name, k.category_id, k.status, created FROM kept k ORDER BY k.ord
              RETURNING pets.id
            ),
            numbered AS (SELECT i.id, row_number() OVER (ORDER BY i.id) AS n FROM inserted i),
            completed AS (
              UPDATE idempotency_keys k SET pet_id = n.id, locked_until = NULL
              FROM numbered n JOIN kept ON kept.n = n.n
              WHERE k.api_key_id = kept.api_key_id AND k.idempotency_key = kept.idempotency_key
            )
            SELECT n.id FROM items i
            LEFT JOIN kept ON kept.ord = i.ord LEFT JOIN numbered n ON n.n = kept.n
            ORDER BY i.ord;
          -- Past its caller's deadline the caller has answered 503: nothing commits after that.
          IF clock_timestamp() > statement_timestamp() + deadline_ms * interval '1 millisecond' THEN
            RAISE EXCEPTION 'insert_pets ran past its deadline of % ms', deadline_ms
              USING ERRCODE = 'query_canceled';
          END IF;
        END $$`.execute(db)
    },
  },
}
