// The create transaction of the SQLite store, shared by the writer thread and the in-process
// writer (an in-memory database, which another thread cannot open).
import type Database from 'better-sqlite3'
import type { IdempotencyRef, NewPet } from '../store.js'

export interface CreateItem {
  pet: NewPet
  completes: IdempotencyRef | undefined
}

/** Inserts a batch in one IMMEDIATE transaction (one WAL sync) and returns the new ids in order. */
export function createTransaction(db: Database.Database): (items: CreateItem[]) => bigint[] {
  const insertPet = db.prepare<[string, bigint, string | null, number], { id: bigint }>(
    'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?) RETURNING id',
  )
  const completeIdempotency = db.prepare<[bigint, string, string]>(
    'UPDATE idempotency_keys SET pet_id = ?, locked_until = NULL WHERE api_key_id = ? AND idempotency_key = ?',
  )
  const commit = db.transaction((items: CreateItem[]): bigint[] =>
    items.map(({ pet, completes }) => {
      const { id } = insertPet.get(pet.name, pet.categoryId, pet.status ?? null, Date.now())!
      if (completes) completeIdempotency.run(id, completes.apiKeyId, completes.key)
      return id
    }),
  )
  return (items) => commit.immediate(items)
}
