// What the main thread and the SQLite writer thread (writer-thread.ts) send each other.
import type { CreateItem } from '../create-item.js'
import type { NewPet } from '../store.js'
import type { WriteName } from './writes.js'

/** A write of the store: the thread answers with what `sqliteWrites(...)[type](...args)` returns. */
export interface WriteRequest {
  type: WriteName
  args: unknown[]
  seq: number
  /** Date.now() when sent: the time it spends queued counts against its wait for the lock. */
  sentAt: number
}

export type WriterRequest = WriteRequest | { type: 'close' }

export type WriterReply =
  | { seq: number; value: unknown }
  | { seq: number; error: { message: string; code: string | undefined } }

/** A create as encodeBatch writes it: name, category id (decimal), status, idempotency claim. */
type BatchRow = [
  string,
  string,
  NewPet['status'] | null,
  string | null,
  string | null,
  string | null,
]

/** A batch of creates as one JSON text of flat rows: faster to cross than a structured clone. */
export function encodeBatch(items: readonly CreateItem[]): string {
  const rows: BatchRow[] = items.map(({ pet, completes }) => [
    pet.name,
    pet.categoryId.toString(),
    pet.status ?? null,
    completes?.apiKeyId ?? null,
    completes?.key ?? null,
    completes?.token ?? null,
  ])
  return JSON.stringify(rows)
}

export function decodeBatch(batch: string): CreateItem[] {
  return (JSON.parse(batch) as BatchRow[]).map(
    ([name, categoryId, status, apiKeyId, key, token]) => {
      const pet: NewPet = { name, categoryId: BigInt(categoryId) }
      if (status !== null) pet.status = status
      return {
        pet,
        completes: apiKeyId === null ? undefined : { apiKeyId, key: key!, token: token! },
      }
    },
  )
}

/** The seed's pets as columns, the category ids in a transferred BigInt64Array: faster still. */
export interface PetColumns {
  names: string[]
  categoryIds: BigInt64Array
  statuses: (NewPet['status'] | null)[]
}

export function encodePets(pets: readonly NewPet[]): PetColumns {
  const n = pets.length
  const columns: PetColumns = {
    names: new Array(n),
    categoryIds: new BigInt64Array(n),
    statuses: new Array(n),
  }
  for (let i = 0; i < n; i++) {
    const pet = pets[i]!
    columns.names[i] = pet.name
    columns.categoryIds[i] = pet.categoryId
    columns.statuses[i] = pet.status ?? null
  }
  return columns
}

export function decodePets({ names, categoryIds, statuses }: PetColumns): NewPet[] {
  return names.map((name, i) => {
    const pet: NewPet = { name, categoryId: categoryIds[i]! }
    const status = statuses[i]
    if (status != null) pet.status = status
    return pet
  })
}
