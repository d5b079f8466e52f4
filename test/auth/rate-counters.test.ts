// The in-memory fixed windows behind the rate limits (the HTTP side is in rate-limit.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type LimitState, MemoryWindows, memoryCounter } from '../../src/auth/rate-counters.js'
import { storeIndependent } from '../support/stores.js'

/** The state a window of at most 2 requests reports. */
const state = (remaining: number, ttlInSeconds: number, isExceeded: boolean): LimitState => ({
  max: 2,
  remaining,
  ttlInSeconds,
  isExceeded,
})

storeIndependent(() => {
  test('a window opens at the first request, counts down, and a new one opens when it ends', async () => {
    let now = 1_000_000
    const count = memoryCounter(new MemoryWindows({ max: 2, windowMs: 10_000 }, () => now))
    assert.deepEqual(await count('a'), state(1, 10, false))
    now += 2_500
    assert.deepEqual(await count('a'), state(0, 8, false))
    assert.deepEqual(await count('a'), state(0, 8, true))
    // Another key has a window of its own.
    assert.deepEqual(await count('b'), state(1, 10, false))
    now += 7_499
    assert.equal((await count('a')).isExceeded, true)
    now += 1
    assert.deepEqual(await count('a'), state(1, 10, false))
  })
})
