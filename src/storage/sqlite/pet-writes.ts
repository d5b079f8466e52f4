// The create transaction of the SQLite store, shared by the writer thread and the in-process
// writer (an in-memory database, which another thread cannot open).
import type Database from 'better-sqlite3'
import type { CreateItem } from '../create-item.js'
import type { NewPet } from '../store.js'

export type { CreateItem } from '../create-item.js'

/**
 * Rows per INSERT, largest first (23 creates: 16 + 4 + 2 + 1): a few prepared statements serve
 * every batch, and a statement's fixed cost is paid per chunk, not per row (docs/performance.md).
 */
const CHUNK_SIZES = [64, 32, 16, 8, 4, 2, 1]
const COLUMNS_PER_ROW = 4

/**
 * Inserts pets, all created at `createdAt`, in multi-row statements on `db`, inside the caller's
 * transaction, and returns their ids in order: the creates' commit and the seed's batches.
 */
export function petInserter(
  db: Database.Database,
): (pets: readonly NewPet[], createdAt: number) => bigint[] {
  const inserts = new Map<number, Database.Statement<unknown[]>>()
  const insertRows = (rows: number): Database.Statement<unknown[]> => {
    let statement = inserts.get(rows)
    if (statement === undefined) {
      const values = Array.from({ length: rows }, () => '(?, ?, ?, ?)').join(', ')
      statement = db.prepare(
        `INSERT INTO pets (name, category_id, status, created_at) VALUES ${values}`,
      )
      inserts.set(rows, statement)
    }
    return statement
  }
  return (pets, createdAt) => {
    const ids: bigint[] = new Array(pets.length)
    let done = 0
    for (const size of CHUNK_SIZES) {
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
        // run() and lastInsertRowid rather than `RETURNING id` (which buffers its output rows):
        // the rows of one statement take consecutive ids, AUTOINCREMENT giving each the one after
        // the row before (or failing the statement, past the largest id), so the last id gives
        // them all. A BigInt: the connection reads integers as BigInt (defaultSafeIntegers).
        const { changes, lastInsertRowid } = insertRows(size).run(values)
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

/**
 * Inserts a batch in one IMMEDIATE transaction (one WAL sync) and returns the new ids in order. A
 * create whose idempotency claim is no longer held (released or taken over) is left out, with
 * CLAIM_RELEASED_ID in its place: its request was answered as failed and may be retried.
 */
export function createTransaction(db: Database.Database): (items: CreateItem[]) => bigint[] {
  const insertPets = petInserter(db)
  const held = db.prepare<[string, string, string]>(
    'SELECT 1 FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL AND claim_token = ?',
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
