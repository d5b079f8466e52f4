// The decision a claim of an Idempotency-Key makes from the key's record, apart from any database.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decideIdempotencyClaim, type IdempotencyRow } from '../../src/storage/idempotency-claim.js'
import { storeIndependent } from '../support/stores.js'

const DAY = 86_400_000
const LEASE = 60_000
const t0 = Date.parse('2026-03-01T00:00:00Z')

const inProgress: IdempotencyRow = {
  request_hash: 'h1',
  pet_id: null,
  created_at: BigInt(t0),
  locked_until: BigInt(t0 + LEASE),
}
const completed: IdempotencyRow = { ...inProgress, pet_id: 7n, locked_until: null }

/** The decision on `row` for a claim made `ms` after t0, kept a day, leased for a minute. */
const decide = (row: IdempotencyRow | undefined, ms: number, requestHash = 'h1') =>
  decideIdempotencyClaim(row, {
    apiKeyId: 'k1',
    key: 'abc',
    requestHash,
    now: new Date(t0 + ms),
    retentionMs: DAY,
    leaseMs: LEASE,
    token: 't1',
  })

const CLAIMED = { outcome: 'claimed' }
const IN_PROGRESS = { outcome: 'in_progress' }
const MISMATCH = { outcome: 'mismatch' }

storeIndependent(() => {
  test('no record: claimed', () => {
    assert.deepEqual(decide(undefined, 0), CLAIMED)
  })

  test('a live record: in progress, completed, or mismatch for another request', () => {
    assert.deepEqual(decide(inProgress, 1), IN_PROGRESS)
    assert.deepEqual(decide(completed, 1), { outcome: 'completed', petId: 7n })
    // The request is compared first: even a claim whose lease ran out refuses another request.
    assert.deepEqual(decide(inProgress, 1, 'h2'), MISMATCH)
    assert.deepEqual(decide(completed, 1, 'h2'), MISMATCH)
    assert.deepEqual(decide(inProgress, LEASE, 'h2'), MISMATCH)
  })

  test('a record past its retention counts as absent', () => {
    assert.deepEqual(decide(completed, DAY - 1, 'h2'), MISMATCH)
    assert.deepEqual(decide(completed, DAY, 'h2'), CLAIMED)
    assert.deepEqual(decide(inProgress, DAY), CLAIMED)
  })

  test('a claim whose lease ran out, or that has none, can be taken over', () => {
    assert.deepEqual(decide(inProgress, LEASE - 1), IN_PROGRESS)
    assert.deepEqual(decide(inProgress, LEASE), CLAIMED)
    assert.deepEqual(decide({ ...inProgress, locked_until: null }, 1), CLAIMED)
  })
})
