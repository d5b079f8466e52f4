// Idempotency records on PostgreSQL: claims, their release, and the purge of old ones.

import type { Deadline } from '../deadline.js'
import type { IdempotencyCap } from '../idempotency-cap.js'
import { decideIdempotencyClaim, type IdempotencyRow } from '../idempotency-claim.js'
import type { IdempotencyClaim, IdempotencyClaimRef, IdempotencyClaimRequest } from '../store.js'
import type { PooledStatements, Transaction } from './statements.js'

export class PostgresIdempotency {
  constructor(
    private readonly db: PooledStatements,
    private readonly cap: IdempotencyCap,
  ) {}

  async claim(req: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    const now = req.now.getTime()
    const claim = [req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs, req.token]
    return this.db.transaction(async (tx) => {
      // No row yet: claimed, as decideIdempotencyClaim has it, in one statement that concurrent
      // claims of the same new key cannot both pass.
      const inserted = await tx.query({
        text: `INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, pet_id,
                 created_at, locked_until, claim_token)
               VALUES ($1, $2, $3, NULL, $4, $5, $6)
               ON CONFLICT (api_key_id, idempotency_key) DO NOTHING`,
        values: claim,
      })
      if (inserted.rowCount === 1) return this.claimed(tx, req.apiKeyId)
      // The row exists: lock it, so concurrent claims through other instances decide one by one.
      const { rows } = await tx.query<IdempotencyRow>({
        text: `SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys
               WHERE api_key_id = $1 AND idempotency_key = $2 FOR UPDATE`,
        values: [req.apiKeyId, req.key],
      })
      // No row: purged or released between the two statements, so the key is free to take.
      const decided = decideIdempotencyClaim(rows[0], req)
      if (decided.outcome !== 'claimed') return decided
      await tx.query({
        text: `INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, pet_id,
                 created_at, locked_until, claim_token)
               VALUES ($1, $2, $3, NULL, $4, $5, $6)
               ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
                 request_hash = excluded.request_hash, pet_id = NULL, created_at = excluded.created_at,
                 locked_until = excluded.locked_until, claim_token = excluded.claim_token`,
        values: claim,
      })
      return this.claimed(tx, req.apiKeyId)
    }, req.deadline)
  }

  /**
   * A claim taken: when due, the key's oldest completed records past the cap go in the same
   * transaction. Locked rows are skipped, so two instances trimming one key cannot deadlock.
   */
  private async claimed(tx: Transaction, apiKeyId: string): Promise<IdempotencyClaim> {
    if (this.cap.claimed(apiKeyId)) {
      const { rows } = await tx.query<{ n: bigint }>(
        this.db.statement(
          'count-idempotency-of-api-key',
          'SELECT count(*) AS n FROM idempotency_keys WHERE api_key_id = $1',
          [apiKeyId],
        ),
      )
      const count = Number(rows[0]!.n)
      const excess = this.cap.excess(count)
      let deleted = 0
      if (excess > 0) {
        const result = await tx.query(
          this.db.statement(
            'delete-oldest-completed-idempotency',
            // By ctid: the rows chosen are deleted where they are, with no scan of the table.
            `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
               SELECT ctid FROM idempotency_keys
               WHERE api_key_id = $1 AND pet_id IS NOT NULL
               ORDER BY created_at, idempotency_key LIMIT $2 FOR UPDATE SKIP LOCKED))`,
            [apiKeyId, excess],
          ),
        )
        deleted = result.rowCount ?? 0
      }
      this.cap.counted(apiKeyId, count - deleted)
    }
    return { outcome: 'claimed' }
  }

  /** Waits for the commit of a create that holds the claim's lock (insert_pets locks it first). */
  async release(ref: IdempotencyClaimRef, deadline?: Deadline): Promise<void> {
    await this.db.query(
      'release-idempotency-claim',
      `DELETE FROM idempotency_keys
       WHERE api_key_id = $1 AND idempotency_key = $2 AND pet_id IS NULL AND claim_token = $3`,
      [ref.apiKeyId, ref.key, ref.token],
      deadline,
    )
  }

  async deleteBefore(cutoff: Date): Promise<number> {
    const result = await this.db.run({
      text: 'DELETE FROM idempotency_keys WHERE created_at < $1',
      values: [cutoff.getTime()],
    })
    return result.rowCount ?? 0
  }
}
