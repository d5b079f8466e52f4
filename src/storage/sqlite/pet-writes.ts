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
  // run() and lastInsertRowid rather than `RETURNING id`: the same id, and 30 inserts in one
  // transaction measured 5.5 instead of 9.4 µs of CPU each (RETURNING buffers its output row).
  const insertPet = db.prepare<[string, bigint, string | null, number]>(
    'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)',
  )
  const completeIdempotency = db.prepare<[bigint, string, string]>(
    'UPDATE idempotency_keys SET pet_id = ?, locked_until = NULL WHERE api_key_id = ? AND idempotency_key = ?',
  )
  const commit = db.transaction((items: CreateItem[]): bigint[] =>
    items.map(({ pet, completes }) => {
      // A BigInt: the connection reads integers as BigInt (defaultSafeIntegers).
      const id = insertPet.run(pet.name, pet.categoryId, pet.status ?? null, Date.now())
        .lastInsertRowid as bigint
      if (completes) completeIdempotency.run(id, completes.apiKeyId, completes.key)
      return id
    }),
  )
  return (items) => commit.immediate(items)
}
