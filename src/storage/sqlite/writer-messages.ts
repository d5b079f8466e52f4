// What the main thread and the SQLite writer thread (writer-thread.ts) send each other.
import type { NewPet } from '../store.js'
import type { CreateItem } from './pet-writes.js'

export type WriterRequest =
  | { type: 'commit'; seq: number; batch: string }
  /** A write that changes nothing (faults.ts writeProbe); answered with no ids. */
  | { type: 'probe'; seq: number }
  | { type: 'close' }

export type WriterReply =
  | { seq: number; ids: BigInt64Array }
  | { seq: number; error: { message: string; code: string | undefined } }

/** A create as encodeBatch writes it: name, category id (decimal), status, idempotency ref. */
type BatchRow = [string, string, NewPet['status'] | null, string | null, string | null]

/**
 * A batch as one JSON text of flat rows, the ids back as a transferred BigInt64Array: cheaper
 * than a structured clone of objects holding BigInts, rebuilt field by field (docs/performance.md).
 */
export function encodeBatch(items: readonly CreateItem[]): string {
  const rows: BatchRow[] = items.map(({ pet, completes }) => [
    pet.name,
    pet.categoryId.toString(),
    pet.status ?? null,
    completes?.apiKeyId ?? null,
    completes?.key ?? null,
  ])
  return JSON.stringify(rows)
}

export function decodeBatch(batch: string): CreateItem[] {
  return (JSON.parse(batch) as BatchRow[]).map(([name, categoryId, status, apiKeyId, key]) => {
    const pet: NewPet = { name, categoryId: BigInt(categoryId) }
    if (status !== null) pet.status = status
    return { pet, completes: apiKeyId === null ? undefined : { apiKeyId, key: key! } }
  })
}
