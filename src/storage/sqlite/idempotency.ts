// Idempotency records on SQLite: claims, their release, and the purge of old ones.
import type Database from 'better-sqlite3'
import type { IdempotencyCap } from '../idempotency-cap.js'
import { decideIdempotencyClaim, type IdempotencyRow } from '../idempotency-claim.js'
import type { IdempotencyClaim, IdempotencyClaimRef, IdempotencyClaimRequest } from '../store.js'

export class SqliteIdempotency {
  private readonly find
  private readonly upsert
  private readonly releaseOne
  private readonly deleteOlder
  private readonly countOfApiKey
  private readonly deleteOldestCompleted
  private readonly claimTransaction

  constructor(
    db: Database.Database,
    private readonly cap: IdempotencyCap,
  ) {
    this.find = db.prepare<[string, string], IdempotencyRow>(
      'SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?',
    )
    this.upsert = db.prepare<[string, string, string, number, number, string]>(
      `INSERT INTO idempotency_keys
           (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until, claim_token)
         VALUES (?, ?, ?, NULL, ?, ?, ?)
         ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
           request_hash = excluded.request_hash, pet_id = NULL, created_at = excluded.created_at,
           locked_until = excluded.locked_until, claim_token = excluded.claim_token`,
    )
    this.releaseOne = db.prepare<[string, string, string]>(
      'DELETE FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL AND claim_token = ?',
    )
    this.deleteOlder = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE created_at < ?')
    this.countOfApiKey = db
      .prepare<[string], bigint>('SELECT count(*) FROM idempotency_keys WHERE api_key_id = ?')
      .pluck()
    this.deleteOldestCompleted = db.prepare<[string, number]>(
      `DELETE FROM idempotency_keys WHERE rowid IN (
           SELECT rowid FROM idempotency_keys WHERE api_key_id = ? AND pet_id IS NOT NULL
           ORDER BY created_at, idempotency_key LIMIT ?)`,
    )
    this.claimTransaction = db.transaction((req: IdempotencyClaimRequest) => this.claimNow(req))
  }

  /** Decides and writes the claim in one IMMEDIATE transaction, which it commits. */
  claim(req: IdempotencyClaimRequest): IdempotencyClaim {
    return this.claimTransaction.immediate(req)
  }

  private claimNow(req: IdempotencyClaimRequest): IdempotencyClaim {
    const now = req.now.getTime()
    const decided = decideIdempotencyClaim(this.find.get(req.apiKeyId, req.key), req)
    if (decided.outcome !== 'claimed') return decided
    this.upsert.run(req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs, req.token)
    if (this.cap.claimed(req.apiKeyId)) this.trim(req.apiKeyId)
    return { outcome: 'claimed' }
  }

  /** Drops the API key's oldest completed records past the cap (IdempotencyCap). */
  private trim(apiKeyId: string): void {
    const count = Number(this.countOfApiKey.get(apiKeyId))
    const excess = this.cap.excess(count)
    const { changes } =
      excess > 0 ? this.deleteOldestCompleted.run(apiKeyId, excess) : { changes: 0 }
    this.cap.counted(apiKeyId, count - changes)
  }

  release(ref: IdempotencyClaimRef): void {
    this.releaseOne.run(ref.apiKeyId, ref.key, ref.token)
  }

  /** Deletes the records created before `cutoff`; returns how many. */
  deleteBefore(cutoff: Date): number {
    return this.deleteOlder.run(cutoff.getTime()).changes
  }
}
