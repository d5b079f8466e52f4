// The SQLite writer thread dying for real while it holds a write: only what it held fails, as an
// unknown outcome, and a create retried with its Idempotency-Key never makes a second pet. Also the
// writes in memory (no thread) and the seed's pets as they cross to the thread.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { buildApp } from '../../../src/app.js'
import { createApiKey } from '../../../src/auth/api-keys.js'
import { manualClock } from '../../../src/clock.js'
import { configWith } from '../../../src/config.js'
import { StorageUnavailableError } from '../../../src/storage/errors.js'
import { BUSY_TIMEOUT_MS, Database } from '../../../src/storage/sqlite/driver.js'
import { openSqliteStore } from '../../../src/storage/sqlite/sqlite-store.js'
import { decodePets, encodePets } from '../../../src/storage/sqlite/writer-messages.js'
import { tempDir } from '../../support/app.js'
import {
  DIE_AFTER_CLAIM,
  DIE_AFTER_COMMIT,
  DIE_BEFORE_COMMIT,
  dyingWriters,
  openGate,
} from '../../support/dying-writer.js'
import { forStore } from '../../support/stores.js'

const INTERRUPTED = 'the write was interrupted and may have been stored; retry later'

const interrupted = (err: unknown) =>
  err instanceof StorageUnavailableError && err.message === INTERRUPTED

function petsNamed(path: string, name: string): number {
  const db = new Database(path, { readonly: true })
  try {
    return Number(db.prepare('SELECT count(*) FROM pets WHERE name = ?').pluck().get(name))
  } finally {
    db.close()
  }
}

forStore('sqlite', () => {
  test("a writer thread's death fails what it held and not the next thread's batch", async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const writers = dyingWriters(t, { open: false })
    const store = await openSqliteStore(path, { spawnWriter: writers.spawn })
    t.after(() => store.close())
    assert.equal((await store.createPet({ name: 'first', categoryId: 1n })).id, 1n)

    // The old thread's `exit` comes milliseconds after its `error`, by which time the next batch is
    // on a new thread. That order is the case at stake: tried until it happened.
    let raced = 0
    for (let round = 1; round <= 6 && raced < 2; round++) {
      const dying = writers.threads.at(-1)!
      const death = round % 2 === 0 ? DIE_BEFORE_COMMIT : DIE_AFTER_COMMIT
      writers.arm(death)
      await assert.rejects(store.createPet({ name: `lost-${round}`, categoryId: 2n }), interrupted)

      const fresh = writers.nextThread()
      let failed: unknown = null
      const next = store.createPet({ name: `next-${round}`, categoryId: 3n })
      next.catch((err: unknown) => {
        failed = err
      })
      // The new thread holds the batch (its gate is shut) until the old thread has exited.
      const thread = await fresh
      if (!dying.hasExited) raced++
      await dying.exited
      await nextTurn()
      assert.equal(failed, null, `round ${round}: the old thread's exit failed the new batch`)
      openGate(thread.gate)
      assert.equal((await next).name, `next-${round}`)
      assert.equal(petsNamed(path, `next-${round}`), 1)
      // The outcome was unknown to the caller; the file says which it was.
      assert.equal(petsNamed(path, `lost-${round}`), death === DIE_AFTER_COMMIT ? 1 : 0)
    }
    assert.ok(raced >= 1, 'the next batch never reached a new thread before the old one exited')
  })

  test('a keyed create whose writer thread died is 503, and its retry with the same key gets one pet', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    const writers = dyingWriters(t, { open: true })
    const store = await openSqliteStore(path, { spawnWriter: writers.spawn })
    t.after(() => store.close())
    const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
    const { key } = await createApiKey(store, clock, 'test-key')
    const app = await buildApp({ config: configWith({}), store, clock })
    await app.ready()
    t.after(() => app.close())
    const post = (body: string, idempotencyKey: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        payload: body,
      })

    for (const [death, name] of [
      [DIE_BEFORE_COMMIT, 'died-before-commit'],
      [DIE_AFTER_COMMIT, 'died-after-commit'],
      // The claim committed, unanswered: released by its token, so the retry is not refused as in
      // progress until the claim's lease ends.
      [DIE_AFTER_CLAIM, 'died-after-claim'],
    ] as const) {
      const body = JSON.stringify({ name, categoryId: 7, status: 'available' })
      writers.arm(death)
      const first = await post(body, `order-${name}`)
      assert.equal(first.statusCode, 503, first.body)
      assert.deepEqual(JSON.parse(first.body), {
        code: 'service_unavailable',
        message: INTERRUPTED,
        status: 503,
      })
      assert.equal(first.headers['retry-after'], '1')

      const retry = await post(body, `order-${name}`)
      assert.equal(retry.statusCode, 201, retry.body)
      // Committed before the thread died: the retry gets that pet; otherwise it makes it now.
      assert.equal(
        retry.headers['idempotent-replayed'],
        death === DIE_AFTER_COMMIT ? 'true' : undefined,
      )
      const again = await post(body, `order-${name}`)
      assert.equal(again.statusCode, 201)
      assert.equal(again.body, retry.body)
      assert.equal(petsNamed(path, name), 1, name)
    }
    assert.equal(writers.threads.length, 4, 'each death started a new thread')
  })

  test('writes queued behind one that waits for the lock wait no longer in all than busy_timeout', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const store = await openSqliteStore(path)
    t.after(() => store.close())
    await store.createPet({ name: 'first', categoryId: 1n })
    // Another connection holding the write lock, as another process would.
    const other = new Database(path)
    t.after(() => other.close())
    other.exec('BEGIN IMMEDIATE')
    const started = performance.now()
    const claims = [1, 2, 3].map((i) =>
      store
        .claimIdempotencyKey({
          apiKeyId: 'aaaaaaaaaaaa',
          key: `k-${i}`,
          token: `token-${i}`,
          requestHash: 'h',
          now: new Date(),
          retentionMs: 86_400_000,
          leaseMs: 60_000,
        })
        .then(
          () => assert.fail('claimed while the lock was held'),
          (err: Error) => ({ message: err.message, ms: performance.now() - started }),
        ),
    )
    const failed = await Promise.all(claims)
    other.exec('ROLLBACK')
    for (const { message, ms } of failed) {
      assert.equal(message, 'the database is locked by another connection; retry later')
      // Queued one after another, they would fail at 5, 10 and 15 s; a busy machine adds little.
      assert.ok(ms > BUSY_TIMEOUT_MS - 100 && ms < BUSY_TIMEOUT_MS + 2000, `failed after ${ms} ms`)
    }
    const claim = await store.claimIdempotencyKey({
      apiKeyId: 'aaaaaaaaaaaa',
      key: 'k-after',
      token: 'token-after',
      requestHash: 'h',
      now: new Date(),
      retentionMs: 86_400_000,
      leaseMs: 60_000,
    })
    assert.deepEqual(claim, { outcome: 'claimed' })
  })

  test('in memory the writes run on the main connection, and each moves the data version', async (t) => {
    const store = await openSqliteStore(':memory:')
    t.after(() => store.close())
    const claimRef = { apiKeyId: 'aaaaaaaaaaaa', key: 'k-1', token: 'token-1' }
    const claim = {
      ...claimRef,
      requestHash: 'h',
      now: new Date('2026-01-15T12:00:00Z'),
      retentionMs: 86_400_000,
      leaseMs: 60_000,
    }
    const key = {
      id: 'aaaaaaaaaaaa',
      name: 'k',
      secretHash: Buffer.alloc(32, 1),
      createdAt: new Date('2026-01-01T00:00:00Z'),
      expiresAt: null,
      revokedAt: null,
    }
    const writes: [string, () => Promise<unknown>, unknown][] = [
      ['insert a key', () => store.insertApiKey(key), undefined],
      ['claim', () => store.claimIdempotencyKey(claim), { outcome: 'claimed' }],
      ['release', () => store.releaseIdempotencyKey(claimRef), undefined],
      ['claim again', () => store.claimIdempotencyKey(claim), { outcome: 'claimed' }],
      ['purge', () => store.deleteIdempotencyKeysBefore(new Date('2026-01-16T00:00:00Z')), 1],
      ['seed', () => store.insertPets([{ name: 'seeded', categoryId: 1n }]), undefined],
      ['revoke', () => store.revokeApiKey(key.id, new Date('2026-01-02T00:00:00Z')), true],
    ]
    let version = (await store.dataVersion()).pets
    for (const [what, write, expected] of writes) {
      assert.deepEqual(await write(), expected, what)
      const next = (await store.dataVersion()).pets
      assert.notEqual(next, version, `${what} moved the data version`)
      version = next
    }
    assert.equal((await store.getPet(1n))?.name, 'seeded')
    assert.ok((await store.findApiKey(key.id))?.revokedAt)
  })

  test("the seed's pets cross to the writer thread as columns and come back the same", () => {
    const pets = [
      { name: 'Rex', categoryId: 9223372036854775807n, status: 'sold' as const },
      { name: 'é "日本" \\ 🐶\n', categoryId: -9223372036854775808n },
      { name: 'x', categoryId: 0n, status: 'pending' as const },
    ]
    const columns = encodePets(pets)
    assert.ok(columns.categoryIds instanceof BigInt64Array)
    assert.deepEqual(decodePets(structuredClone(columns)), pets)
    assert.deepEqual(decodePets(encodePets([])), [])
  })
})
