// Every write of the SQLite store, on one connection: the writer thread's (writer-thread.ts), or
// the main connection's for an in-memory database, which no other thread can open.
import type Database from 'better-sqlite3'
import { apiKeyValues } from '../api-key-row.js'
import type { CreateItem } from '../create-item.js'
import type { IdempotencyCap } from '../idempotency-cap.js'
import { decideIdempotencyClaim, type IdempotencyRow } from '../idempotency-claim.js'
import type * as domain from '../store.js'
import { decodeBatch, decodePets, type PetColumns } from './writer-messages.js'

/** The writes by name, each taking what crosses to the writer thread and returning its answer. */
export function sqliteWrites(db: Database.Database, cap: IdempotencyCap) {
  const insertPets = petInserter(db)
  const commit = createTransaction(db, insertPets)
  const insertAll = db.transaction(insertPets)
  const insertKey = db.prepare<[string, string, Buffer, number, number | null, number | null]>(
    'INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)',
  )
  const revokeKey = db.prepare<[number, string]>(
    'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
  )
  // A real write and sync that changes nothing (user_version set to itself): readiness runs it
  // after a write failed, to learn when writes work again.
  const userVersion = db.prepare<[], number>('PRAGMA user_version').pluck().safeIntegers(false)
  const probe = db.transaction(() => db.pragma(`user_version = ${userVersion.get()!}`))
  return {
    /** A batch of creates (encodeBatch) in one transaction; their ids in order. */
    commit: (batch: string) => BigInt64Array.from(commit(decodeBatch(batch))),
    probe: (): void => void probe.immediate(),
    ...idempotencyWrites(db, cap),
    // From another thread secretHash arrives as a Uint8Array, which SQLite binds as a Buffer's bytes.
    insertKey: (k: domain.ApiKeyRecord): void => void insertKey.run(...apiKeyValues(k)),
    /** True when the key was there and not yet revoked. */
    revokeKey: (id: string, at: Date) => revokeKey.run(at.getTime(), id).changes > 0,
    /** The seed's pets in one transaction (one WAL sync). */
    insertPets: (pets: PetColumns): void => void insertAll.immediate(decodePets(pets), Date.now()),
  }
}

export type SqliteWrites = ReturnType<typeof sqliteWrites>
export type WriteName = keyof SqliteWrites
export type WriteArgs<K extends WriteName> = Parameters<SqliteWrites[K]>
export type WriteAnswer<K extends WriteName> = ReturnType<SqliteWrites[K]>

/** Rows per INSERT, largest first (23: 16 + 4 + 2 + 1): a statement's fixed cost is per chunk. */
const CHUNK_SIZES = [64, 32, 16, 8, 4, 2, 1]
const COLUMNS_PER_ROW = 4

type InsertPets = (pets: readonly domain.NewPet[], createdAt: number) => bigint[]

/** Inserts pets in multi-row statements inside the caller's transaction; their ids in order. */
function petInserter(db: Database.Database): InsertPets {
  const chunks = CHUNK_SIZES.map((size) => {
    const rows = Array(size).fill('(?, ?, ?, ?)').join(', ')
    const sql = `INSERT INTO pets (name, category_id, status, created_at) VALUES ${rows}`
    return { size, insert: db.prepare<unknown[]>(sql) }
  })
  return (pets, createdAt) => {
    const ids: bigint[] = new Array(pets.length)
    let done = 0
    for (const { size, insert } of chunks) {
      while (pets.length - done >= size) {
        const values: unknown[] = new Array(size * COLUMNS_PER_ROW)
        for (let i = 0; i < size; i++) {
          const pet = pets[done + i]!
          const at = i * COLUMNS_PER_ROW
          values[at] = pet.name
          values[at + 1] = pet.categoryId
          values[at + 2] = pet.status ?? null
          values[at + 3] = createdAt
        }
        // lastInsertRowid rather than `RETURNING id`, which buffers its rows: AUTOINCREMENT gives
        // a statement's rows consecutive ids (or fails it), so the last (a BigInt) gives them all.
        const { changes, lastInsertRowid } = insert.run(values)
        if (changes !== size) throw new Error(`inserted ${changes} of ${size} pets`)
        const first = (lastInsertRowid as bigint) - BigInt(size - 1)
        for (let i = 0; i < size; i++) ids[done + i] = first + BigInt(i)
        done += size
      }
    }
    return ids
  }
}

/** Where a create was refused, in place of its id: no pet has it (ids start at 1). */
export const CLAIM_RELEASED_ID = 0n

/** The claim a create completes, while it is still held: not completed, and the same token. */
const HELD_CLAIM = 'api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL AND claim_token = ?'

/**
 * Inserts a batch in one IMMEDIATE transaction (one WAL sync); the new ids in order. A create whose
 * claim is no longer held (released or taken over: its request was answered as failed) is left
 * out, CLAIM_RELEASED_ID in its place.
 */
export function createTransaction(
  db: Database.Database,
  insertPets: InsertPets = petInserter(db),
): (items: CreateItem[]) => bigint[] {
  const held = db.prepare<[string, string, string]>(
    `SELECT 1 FROM idempotency_keys WHERE ${HELD_CLAIM}`,
  )
  const completeIdempotency = db.prepare<[bigint, string, string]>(
    'UPDATE idempotency_keys SET pet_id = ?, locked_until = NULL WHERE api_key_id = ? AND idempotency_key = ?',
  )
  const isHeld = ({ completes: c }: CreateItem) =>
    c === undefined || held.get(c.apiKeyId, c.key, c.token) !== undefined
  const commit = db.transaction((items: CreateItem[]): bigint[] => {
    const kept = items.every(isHeld) ? items : items.filter(isHeld)
    const keptIds = insertPets(
      kept.map((item) => item.pet),
      Date.now(),
    )
    for (let i = 0; i < kept.length; i++) {
      const completes = kept[i]!.completes
      if (completes) completeIdempotency.run(keptIds[i]!, completes.apiKeyId, completes.key)
    }
    if (kept === items) return keptIds
    const ids = new Map(kept.map((item, i) => [item, keptIds[i]!]))
    return items.map((item) => ids.get(item) ?? CLAIM_RELEASED_ID)
  })
  return (items) => commit.immediate(items)
}

/** Claims of Idempotency-Keys, their release, and the purge of old ones. */
function idempotencyWrites(db: Database.Database, cap: IdempotencyCap) {
  const find = db.prepare<[string, string], IdempotencyRow>(
    'SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?',
  )
  const upsert = db.prepare<[string, string, string, number, number, string]>(
    `INSERT INTO idempotency_keys
         (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until, claim_token)
       VALUES (?, ?, ?, NULL, ?, ?, ?)
       ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
         request_hash = excluded.request_hash, pet_id = NULL, created_at = excluded.created_at,
         locked_until = excluded.locked_until, claim_token = excluded.claim_token`,
  )
  const release = db.prepare<[string, string, string]>(
    `DELETE FROM idempotency_keys WHERE ${HELD_CLAIM}`,
  )
  const purge = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE created_at < ?')
  const countOf = db
    .prepare<[string], bigint>('SELECT count(*) FROM idempotency_keys WHERE api_key_id = ?')
    .pluck()
  const deleteOldestCompleted = db.prepare<[string, number]>(
    `DELETE FROM idempotency_keys WHERE rowid IN (
         SELECT rowid FROM idempotency_keys WHERE api_key_id = ? AND pet_id IS NOT NULL
         ORDER BY created_at, idempotency_key LIMIT ?)`,
  )
  /** Drops the API key's oldest completed records past the cap (IdempotencyCap). */
  const trim = (apiKeyId: string) => {
    const count = Number(countOf.get(apiKeyId))
    const excess = cap.excess(count)
    const deleted = excess > 0 ? deleteOldestCompleted.run(apiKeyId, excess).changes : 0
    cap.counted(apiKeyId, count - deleted)
  }
  const claim = db.transaction((req: domain.IdempotencyClaimRequest) => {
    const now = req.now.getTime()
    const decided = decideIdempotencyClaim(find.get(req.apiKeyId, req.key), req)
    if (decided.outcome !== 'claimed') return decided
    upsert.run(req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs, req.token)
    if (cap.claimed(req.apiKeyId)) trim(req.apiKeyId)
    return decided
  })
  return {
    /** Decides and writes the claim in one IMMEDIATE transaction, which it commits. */
    claim: (req: domain.IdempotencyClaimRequest) => claim.immediate(req),
    release: (ref: domain.IdempotencyClaimRef): void =>
      void release.run(ref.apiKeyId, ref.key, ref.token),
    /** Deletes the records created before `cutoff`; returns how many. */
    purge: (cutoff: Date) => purge.run(cutoff.getTime()).changes,
  }
}
