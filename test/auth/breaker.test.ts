// The circuit breaker in front of the shared counters: opens on a failure, says so once, probes
// one at a time when due, and closes when a probe answers.
import assert from 'node:assert/strict'
import { type TestContext, test } from 'node:test'
import { Breaker } from '../../src/auth/rate-counters.js'
import { storeIndependent } from '../support/stores.js'

function harness(t: TestContext) {
  t.mock.timers.enable({ apis: ['Date'], now: 1000 })
  const events: string[] = []
  const probes: { resolve(): void; reject(): void }[] = []
  const breaker = new Breaker({
    openMs: 5000,
    probe: () =>
      new Promise<void>((resolve, reject) => {
        probes.push({ resolve, reject: () => reject(new Error('no answer')) })
      }),
    onOpen: (err) => events.push(`open: ${(err as Error).message}`),
    onClose: () => events.push('close'),
  })
  return { breaker, events, probes, advance: (ms: number) => t.mock.timers.tick(ms) }
}

/** Lets a settled probe's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

storeIndependent(() => {
  test('a failure opens it once; it probes only when due, one at a time, and closes on an answer', async (t) => {
    const { breaker, events, probes, advance } = harness(t)
    assert.equal(breaker.isOpen(), false)
    breaker.trip(new Error('timed out'))
    breaker.trip(new Error('timed out again'))
    assert.deepEqual(events, ['open: timed out'])

    advance(4999)
    assert.equal(breaker.isOpen(), true)
    assert.equal(probes.length, 0)
    advance(1)
    assert.equal(breaker.isOpen(), true)
    assert.equal(breaker.isOpen(), true)
    assert.equal(probes.length, 1, 'one probe at a time')

    // A probe that fails leaves the store alone for another openMs.
    probes[0]!.reject()
    await settle()
    advance(4999)
    assert.equal(breaker.isOpen(), true)
    assert.equal(probes.length, 1)
    advance(1)
    assert.equal(breaker.isOpen(), true)
    assert.equal(probes.length, 2)

    probes[1]!.resolve()
    await settle()
    assert.equal(breaker.isOpen(), false)
    assert.deepEqual(events, ['open: timed out', 'close'])

    // The next outage is told again.
    breaker.trip(new Error('refused'))
    assert.deepEqual(events, ['open: timed out', 'close', 'open: refused'])
  })

  test('a breaker started open says nothing, probes at the first call, and says when it closes', async (t) => {
    const { breaker, events, probes } = harness(t)
    breaker.startOpen()
    assert.equal(breaker.isOpen(), true)
    assert.equal(probes.length, 1)
    probes[0]!.resolve()
    await settle()
    assert.equal(breaker.isOpen(), false)
    assert.deepEqual(events, ['close'])
  })
})
