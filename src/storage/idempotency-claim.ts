// What a claim of an Idempotency-Key finds, given the key's record. The rule is the same for every
// adapter; each adapter only reads the record and writes the claim, in one transaction.
import type { IdempotencyClaim, IdempotencyClaimRequest } from './store.js'

/** The idempotency_keys columns a claim reads, as both adapters read them (epoch milliseconds). */
export interface IdempotencyRow {
  request_hash: string
  pet_id: bigint | null
  created_at: bigint
  locked_until: bigint | null
}

/**
 * The outcome of a claim on `row` (undefined: none). `claimed`: write a new claim over what is
 * there, which may be a record past its retention, or one of the same request whose lease ran out.
 */
export function decideIdempotencyClaim(
  row: IdempotencyRow | undefined,
  req: IdempotencyClaimRequest,
): IdempotencyClaim {
  const now = req.now.getTime()
  if (row !== undefined && Number(row.created_at) + req.retentionMs > now) {
    if (row.request_hash !== req.requestHash) return { outcome: 'mismatch' }
    if (row.pet_id !== null) return { outcome: 'completed', petId: row.pet_id }
    if (row.locked_until !== null && Number(row.locked_until) > now)
      return { outcome: 'in_progress' }
  }
  return { outcome: 'claimed' }
}
