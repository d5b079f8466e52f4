// Another process holding SQLite's write lock (`petstore keys`, a backup, a sqlite3 shell left in a
// transaction) stalls the writes, each on the writer thread, and nothing else: the event loop of a
// real `petstore serve` goes on answering health, cached lists and metrics meanwhile.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { SQLITE_DRIVER } from '../../../src/storage/sqlite/driver.js'
import { call, type Reply } from '../../support/api.js'
import { forStore } from '../../support/stores.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../../support/workspace.js'

const require = createRequire(import.meta.url)
const KEY = 'write-lock-test-key-0123456789'
/** How long the lock is held: well within busy_timeout (5 s), so the create then goes through. */
const HOLD_MS = 3000
/** What an answer may take while the lock is held. */
const LIMIT_MS = 50

/** Another process that takes the write lock, says `locked`, and gives it back at a line on stdin. */
function lockHolder(path: string) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require(${JSON.stringify(require.resolve(SQLITE_DRIVER))}))(${JSON.stringify(path)})
       db.exec('BEGIN IMMEDIATE')
       console.log('locked')
       process.stdin.once('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0) })`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const exited = once(child, 'exit')
  return { child, exited, locked: once(child.stdout, 'data') }
}

async function timed(request: () => Promise<Reply>): Promise<number> {
  const started = performance.now()
  const reply = await request()
  const ms = performance.now() - started
  assert.equal(reply.status, 200, reply.body)
  return ms
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!

forStore('sqlite', () => {
  test('a write lock held by another process stalls a keyed create, and not health, a cached list or metrics', {
    timeout: 60_000,
  }, async (t) => {
    const harness = workspace(t, {
      ...JSON_LOGS_NO_LIMIT,
      PETSTORE_API_KEYS: KEY,
      PETSTORE_METRICS_PORT: '0',
    })
    const service = await harness.start()
    const metricsUrl = new URL(service.metricsUrl!)
    const requests = {
      healthz: () => call(service.port, { path: '/healthz' }),
      list: () => call(service.port, { path: '/v1/pets', key: KEY }),
      // The same page again, with nothing committed since: served from the read cache.
      cachedList: () => call(service.port, { path: '/v1/pets', key: KEY }),
      metrics: () => call(Number(metricsUrl.port), { path: metricsUrl.pathname }),
    }
    const body = JSON.stringify({ name: 'held', categoryId: 1 })
    const created = await call(service.port, { method: 'POST', path: '/v1/pets', key: KEY, body })
    assert.equal(created.status, 201, created.body)
    for (const request of Object.values(requests)) await timed(request)

    const holder = lockHolder(harness.dbPath)
    t.after(() => holder.child.kill())
    await holder.locked
    const lockedAt = performance.now()
    let createSettled = false
    const create = call(service.port, {
      method: 'POST',
      path: '/v1/pets',
      key: KEY,
      body,
      headers: { 'idempotency-key': 'held-1' },
    }).finally(() => {
      createSettled = true
    })

    // Rounds until the lock has been held HOLD_MS. One answer can be slow on a busy shared machine
    // for reasons of its own, so each kind is judged by its median over the rounds.
    const times: Record<keyof typeof requests, number[]> = {
      healthz: [],
      list: [],
      cachedList: [],
      metrics: [],
    }
    let rounds = 0
    while (performance.now() - lockedAt < HOLD_MS) {
      for (const [name, request] of Object.entries(requests)) {
        times[name as keyof typeof requests].push(await timed(request))
      }
      rounds++
    }
    const medians = Object.entries(times).map(([name, ms]) => `${name} ${median(ms).toFixed(1)}`)
    t.diagnostic(`medians (ms) over ${rounds} rounds: ${medians.join(', ')}`)
    assert.ok(rounds >= 5, `only ${rounds} rounds while the lock was held`)
    for (const [name, ms] of Object.entries(times)) {
      const middle = median(ms)
      assert.ok(middle < LIMIT_MS, `${name}: median ${middle.toFixed(1)} ms of ${ms.length}`)
    }
    assert.equal(createSettled, false, 'the keyed create waited for the lock')

    holder.child.stdin.write('release\n')
    await holder.exited
    const reply = await create
    assert.equal(reply.status, 201, reply.body)
    assert.match(reply.body, /^\{"id":2,"name":"held","categoryId":1\}$/)
  })
})
