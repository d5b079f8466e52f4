// The in-memory fixed windows behind the rate limits (the HTTP side is in rate-limit.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyRequest } from 'fastify'
import { type LimitState, MemoryWindows, memoryCounter } from '../src/auth/rate-counters.js'

const request = (name: string) => ({ name }) as unknown as FastifyRequest
const keyOf = (r: FastifyRequest) => (r as unknown as { name: string }).name

/** The state a window of at most 2 requests reports. */
const state = (remaining: number, ttlInSeconds: number, isExceeded: boolean): LimitState => ({
  max: 2,
  remaining,
  ttlInSeconds,
  isExceeded,
})

test('a window opens at the first request, counts down, and a new one opens when it ends', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
  const count = memoryCounter(new MemoryWindows({ max: 2, windowMs: 10_000 }), keyOf)
  assert.deepEqual(count(request('a')), state(1, 10, false))
  t.mock.timers.tick(2_500)
  assert.deepEqual(count(request('a')), state(0, 8, false))
  assert.deepEqual(count(request('a')), state(0, 8, true))
  // Another key has a window of its own.
  assert.deepEqual(count(request('b')), state(1, 10, false))
  t.mock.timers.tick(7_499)
  assert.equal((count(request('a')) as LimitState).isExceeded, true)
  t.mock.timers.tick(1)
  assert.deepEqual(count(request('a')), state(1, 10, false))
})

test('takeIfRoom counts a request only while the budget has room, and counts nothing otherwise', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
  const windows = new MemoryWindows({ max: 2, windowMs: 10_000 })
  assert.deepEqual(windows.takeIfRoom('a'), state(1, 10, false))
  t.mock.timers.tick(1_000)
  assert.deepEqual(windows.takeIfRoom('a'), state(0, 9, false))
  assert.equal(windows.takeIfRoom('a'), null)
  assert.equal(windows.takeIfRoom('a'), null)
  assert.deepEqual(windows.takeIfRoom('b'), state(1, 10, false))
  // Refusing did not count: the window is exactly at its budget, one take past it.
  assert.deepEqual(windows.take('a'), state(0, 9, true))
  t.mock.timers.tick(9_000)
  assert.deepEqual(windows.takeIfRoom('a'), state(1, 10, false))
})
