// The decision a claim of an Idempotency-Key makes from the key's record, apart from any database.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decideIdempotencyClaim, type IdempotencyRow } from '../../src/storage/idempotency-claim.js'
import type { IdempotencyClaimRequest } from '../../src/storage/store.js'
import { storeIndependent } from '../support/stores.js'

const DAY = 86_400_000
const LEASE = 60_000
const t0 = Date.parse('2026-03-01T00:00:00Z')

/** A claim made `ms` after the record below was written, kept a day, leased for a minute. */
const claimAt = (ms: number, requestHash = 'h1'): IdempotencyClaimRequest => ({
  apiKeyId: 'k1',
  key: 'abc',
  requestHash,
  now: new Date(t0 + ms),
  retentionMs: DAY,
  leaseMs: LEASE,
  token: 't1',
})

const inProgress: IdempotencyRow = {
  request_hash: 'h1',
  pet_id: null,
  created_at: BigInt(t0),
  locked_until: BigInt(t0 + LEASE),
}
const completed: IdempotencyRow = { ...inProgress, pet_id: 7n, locked_until: null }

storeIndependent(() => {
  test('no record: claimed', () => {
    assert.deepEqual(decideIdempotencyClaim(undefined, claimAt(0)), { outcome: 'claimed' })
  })

  test('a live record: in progress, completed, or mismatch for another request', () => {
    assert.deepEqual(decideIdempotencyClaim(inProgress, claimAt(1)), { outcome: 'in_progress' })
    assert.deepEqual(decideIdempotencyClaim(completed, claimAt(1)), {
      outcome: 'completed',
      petId: 7n,
    })
    // The request is compared first: even a claim whose lease ran out refuses another request.
    for (const [row, ms] of [
      [inProgress, 1],
      [completed, 1],
      [inProgress, LEASE],
    ] as const) {
      assert.deepEqual(decideIdempotencyClaim(row, claimAt(ms, 'h2')), { outcome: 'mismatch' })
    }
  })

  test('a record past its retention counts as absent', () => {
    assert.deepEqual(decideIdempotencyClaim(completed, claimAt(DAY - 1, 'h2')), {
      outcome: 'mismatch',
    })
    assert.deepEqual(decideIdempotencyClaim(completed, claimAt(DAY, 'h2')), { outcome: 'claimed' })
    assert.deepEqual(decideIdempotencyClaim(inProgress, claimAt(DAY)), { outcome: 'claimed' })
  })

  test('a claim whose lease ran out, or that has none, can be taken over', () => {
    assert.deepEqual(decideIdempotencyClaim(inProgress, claimAt(LEASE - 1)), {
      outcome: 'in_progress',
    })
    assert.deepEqual(decideIdempotencyClaim(inProgress, claimAt(LEASE)), { outcome: 'claimed' })
    assert.deepEqual(decideIdempotencyClaim({ ...inProgress, locked_until: null }, claimAt(1)), {
      outcome: 'claimed',
    })
  })
})
