// When an adapter counts an API key's idempotency records, and how many it then drops.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { IdempotencyCap } from '../../src/storage/idempotency-cap.js'
import { storeIndependent } from '../support/stores.js'

/** Claims made until the next count is due, after one that was counted. */
function claimsUntilDue(cap: IdempotencyCap, apiKeyId: string): number {
  let n = 0
  while (!cap.claimed(apiKeyId)) n++
  return n
}

storeIndependent(() => {
  test('a small cap is counted at every claim and kept exactly', () => {
    const cap = new IdempotencyCap(3)
    assert.equal(cap.claimed('k'), true)
    cap.counted('k', 1)
    assert.equal(cap.claimed('k'), true)
    const excess = [3, 4, 9].map((n) => cap.excess(n))
    assert.deepEqual(excess, [0, 1, 6])
  })

  test('10,000: counted every 100 claims, trimmed to 9,500, never past the cap in one process', () => {
    const cap = new IdempotencyCap(10_000)
    assert.equal(cap.claimed('k'), true, 'a key never counted is counted')
    cap.counted('k', 1)
    assert.equal(claimsUntilDue(cap, 'k'), 100)
    assert.equal(cap.excess(10_000), 0)
    assert.equal(cap.excess(10_001), 501)
    // Close to the cap, the next count comes before the cap could be passed.
    cap.counted('k', 9_950)
    assert.equal(claimsUntilDue(cap, 'k'), 50)
    cap.counted('k', 10_000)
    assert.equal(cap.claimed('k'), true)
    // Each API key has its own count.
    assert.equal(cap.claimed('other'), true)
    // A simulated key at the cap: its records stay from 9,500 to 10,000.
    let records = 10_000
    cap.counted('k', records)
    for (let i = 0; i < 1_000; i++) {
      records++
      if (cap.claimed('k')) {
        records -= cap.excess(records)
        cap.counted('k', records)
      }
      assert.ok(records <= 10_000 && records >= 9_500, `${records} records`)
    }
  })

  test('claims taken while a count runs neither count again nor push the key past the cap', () => {
    const cap = new IdempotencyCap(10_000)
    cap.counted('k', 10_000)
    assert.equal(cap.claimed('k'), true, 'the count of the claim at 10,001')
    // Three more claims commit while that count's transaction runs: none counts again.
    assert.deepEqual([cap.claimed('k'), cap.claimed('k'), cap.claimed('k')], [false, false, false])
    // The count saw 10,001 and trimmed 501; of the next 100, the three made since count too.
    cap.counted('k', 10_001 - cap.excess(10_001))
    assert.equal(claimsUntilDue(cap, 'k'), 97)
  })

  test('a cap below 1 or not whole is refused', () => {
    assert.throws(() => new IdempotencyCap(0), RangeError)
    assert.throws(() => new IdempotencyCap(2.5), RangeError)
  })
})
