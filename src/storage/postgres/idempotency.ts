// An Idempotency-Key claim on PostgreSQL: one transaction, decided by the shared rule
// (idempotency-claim.ts), with the trim of the key's records past the cap.
import type { IdempotencyCap } from '../idempotency-cap.js'
import { decideIdempotencyClaim, type IdempotencyRow } from '../idempotency-claim.js'
import type { IdempotencyClaim, IdempotencyClaimRequest } from '../store.js'
import type { Query, Statements } from './pool.js'

const INSERT_CLAIM = `INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, pet_id,
    created_at, locked_until, claim_token)
  VALUES ($1, $2, $3, NULL, $4, $5, $6)
  ON CONFLICT (api_key_id, idempotency_key) DO`

export function claimIdempotencyKey(
  db: Statements,
  cap: IdempotencyCap,
  req: IdempotencyClaimRequest,
): Promise<IdempotencyClaim> {
  const now = req.now.getTime()
  const claim = [req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs, req.token]
  return db.transaction(async (query) => {
    // No row yet: claimed, as decideIdempotencyClaim has it, in one statement that concurrent
    // claims of the same new key cannot both pass.
    const inserted = await query('claim-idempotency-key', `${INSERT_CLAIM} NOTHING`, claim)
    if (inserted.rowCount === 1) return claimed(query, cap, req.apiKeyId)
    // The row exists: lock it, so concurrent claims through other instances decide one by one.
    const { rows } = await query<IdempotencyRow>(
      'lock-idempotency-key',
      `SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys
       WHERE api_key_id = $1 AND idempotency_key = $2 FOR UPDATE`,
      [req.apiKeyId, req.key],
    )
    // No row: purged or released between the two statements, so the key is free to take.
    const decided = decideIdempotencyClaim(rows[0], req)
    if (decided.outcome !== 'claimed') return decided
    await query(
      'take-over-idempotency-key',
      `${INSERT_CLAIM} UPDATE SET request_hash = excluded.request_hash, pet_id = NULL,
         created_at = excluded.created_at, locked_until = excluded.locked_until,
         claim_token = excluded.claim_token`,
      claim,
    )
    return claimed(query, cap, req.apiKeyId)
  }, req.deadline)
}

/**
 * A claim taken: when due, the key's oldest completed records past the cap go in the same
 * transaction. Locked rows are skipped, so two instances trimming one key cannot deadlock.
 */
async function claimed(
  query: Query,
  cap: IdempotencyCap,
  apiKeyId: string,
): Promise<IdempotencyClaim> {
  if (!cap.claimed(apiKeyId)) return { outcome: 'claimed' }
  const { rows } = await query<{ n: bigint }>(
    'count-idempotency-of-api-key',
    'SELECT count(*) AS n FROM idempotency_keys WHERE api_key_id = $1',
    [apiKeyId],
  )
  const count = Number(rows[0]!.n)
  const excess = cap.excess(count)
  const trimmed =
    excess > 0
      ? await query(
          'delete-oldest-completed-idempotency',
          // By ctid: the rows chosen are deleted where they are, with no scan of the table.
          `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
             SELECT ctid FROM idempotency_keys
             WHERE api_key_id = $1 AND pet_id IS NOT NULL
             ORDER BY created_at, idempotency_key LIMIT $2 FOR UPDATE SKIP LOCKED))`,
          [apiKeyId, excess],
        )
      : null
  cap.counted(apiKeyId, count - (trimmed?.rowCount ?? 0))
  return { outcome: 'claimed' }
}
