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
 * A batch as one JSON text of flat rows (BatchRow), and the ids back as one BigInt64Array whose
 * buffer is transferred. Why: the structured clone of an array of objects holding BigInts is
 * written and rebuilt object by object, property by property, on both threads; one string is
 * copied whole, and JSON's own parser is native (docs/performance.md).
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
