// The in-memory fixed windows behind the rate limits (the HTTP side is in rate-limit.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type LimitState, MemoryWindows } from '../../src/auth/rate-counters.js'
import { storeIndependent } from '../support/stores.js'

/** The state a window reports. */
const state = (remaining: number, ttlInSeconds: number, isExceeded: boolean): LimitState => ({
  remaining,
  ttlInSeconds,
  isExceeded,
})

storeIndependent(() => {
  test('a window opens at the first request, counts down, and a new one opens when it ends', (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
    const windows = new MemoryWindows({ max: 2, windowMs: 10_000 })
    const count = (name: string) => windows.take(name)
    assert.deepEqual(count('a'), state(1, 10, false))
    t.mock.timers.tick(2_500)
    assert.deepEqual(count('a'), state(0, 8, false))
    assert.deepEqual(count('a'), state(0, 8, true))
    // Another key has a window of its own.
    assert.deepEqual(count('b'), state(1, 10, false))
    t.mock.timers.tick(7_499)
    assert.equal(count('a').isExceeded, true)
    t.mock.timers.tick(1)
    assert.deepEqual(count('a'), state(1, 10, false))
  })
})
