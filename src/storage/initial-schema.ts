// The schema both adapters begin with (their migration 001), written once with each dialect's
// column types. Applied migrations never change: a new schema takes a new migration, not an edit.
import { type Kysely, sql } from 'kysely'

/** A dialect's column types for the shared schema. */
export interface ColumnTypes {
  /** The pets id column: ascending and never reused, so that a page cursor never skips a pet. */
  petId: string
  integer: string
  bytes: string
}

/** The CHECK on pets.status as migration 001 wrote it. */
const STATUS_IN_LIST = "status IN ('available', 'pending', 'sold')"

/** The pets table under the name `table`, its status checked by `statusCheck`. */
export async function createPetsTable(
  db: Kysely<unknown>,
  types: ColumnTypes,
  table = 'pets',
  statusCheck = STATUS_IN_LIST,
): Promise<void> {
  await sql`CREATE TABLE ${sql.raw(table)} (
        id ${sql.raw(types.petId)},
        name TEXT NOT NULL,
        category_id ${sql.raw(types.integer)} NOT NULL,
        status TEXT CHECK (${sql.raw(statusCheck)}),
        created_at ${sql.raw(types.integer)} NOT NULL
      )`.execute(db)
}

export async function createPetsIndex(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX pets_status_id ON pets (status, id)`.execute(db)
}

/** Migration 001: pets, API keys and idempotency records. */
export async function createInitialSchema(db: Kysely<unknown>, types: ColumnTypes): Promise<void> {
  const integer = sql.raw(types.integer)
  await createPetsTable(db, types)
  await createPetsIndex(db)
  await sql`CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash ${sql.raw(types.bytes)} NOT NULL,
        created_at ${integer} NOT NULL,
        expires_at ${integer},
        revoked_at ${integer}
      )`.execute(db)
  await sql`CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        pet_id ${integer} REFERENCES pets (id),
        created_at ${integer} NOT NULL,
        locked_until ${integer},
        PRIMARY KEY (api_key_id, idempotency_key)
      )`.execute(db)
  await sql`CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`.execute(db)
}
