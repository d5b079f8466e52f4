// Idempotency-Key on POST /v1/pets: replay, mismatch, in flight, scope, retention, failure.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { createApiKey } from '../../src/auth/api-keys.js'
import { PetService } from '../../src/pets/service.js'
import type { Pet, Store } from '../../src/storage/store.js'
import { json, type TestApp, testApp } from '../support/app.js'
import { assertAnswered, errorBody } from '../support/errors.js'

const HOUR_MS = 60 * 60 * 1000

type CreateArgs = Parameters<Store['createPet']>

function post(
  app: TestApp,
  payload: string,
  idempotencyKey?: string,
  apiKey: string = app.key,
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: `Bearer ${apiKey}`,
  }
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
  return app.call({ method: 'POST', url: '/v1/pets', headers, payload })
}

async function allPets(app: TestApp): Promise<unknown[]> {
  const res = await app.call({ method: 'GET', url: '/v1/pets?limit=100' })
  assert.equal(res.statusCode, 200)
  return json(res) as unknown[]
}

/** A store whose createPet is replaced; every other method is the real store's. */
function withCreatePet(
  store: Store,
  createPet: (real: Store, ...args: CreateArgs) => Promise<Pet>,
): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'createPet') return (...args: CreateArgs) => createPet(target, ...args)
      const value = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

const REX = '{"name":"Rex","categoryId":9007199254740993,"status":"available"}'
// The same JSON value as REX: other key order, other spacing.
const REX_REORDERED = '{ "status" : "available",\n  "categoryId":9007199254740993 ,"name": "Rex" }'
/** The pet REX becomes, as raw text: every digit of the int64 must survive. */
const rexPet = (id: number) =>
  `{"id":${id},"name":"Rex","categoryId":9007199254740993,"status":"available"}`

describe('Idempotency-Key', () => {
  test('a retry with the same key and the same JSON value replays the first response', async (t) => {
    const app = await testApp(t)
    const first = await post(app, REX, 'order-42')
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    assert.equal(first.headers.location, '/v1/pets/1')

    const retry = await post(app, REX_REORDERED, 'order-42')
    assert.equal(retry.statusCode, 201)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.equal(retry.headers.location, '/v1/pets/1')
    assert.equal(first.body, rexPet(1))
    assert.equal(retry.body, rexPet(1))

    const pets = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(pets.body, `[${first.body}]`)
  })

  test('the same key with a different body is 422 and creates nothing', async (t) => {
    const app = await testApp(t)
    const first = await post(app, REX, 'order-42')
    assert.equal(first.statusCode, 201)
    for (const other of [
      '{"name":"Rex","categoryId":9007199254740992,"status":"available"}',
      '{"name":"Rex","categoryId":9007199254740993}',
      '{"name":"Max","categoryId":9007199254740993,"status":"available"}',
    ]) {
      const res = await post(app, other, 'order-42')
      assert.equal(res.statusCode, 422, other)
      assert.deepEqual(json(res), {
        code: 'idempotency_key_reused',
        message: 'Idempotency-Key was already used with a different request body',
        status: 422,
      })
      assert.equal(res.headers['idempotent-replayed'], undefined)
    }
    const pets = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(pets.body, `[${first.body}]`)
  })

  test('while the first request is in flight, a second is 409; afterwards it replays', async (t) => {
    const entered = deferred()
    const release = deferred()
    let calls = 0
    const app = await testApp(t, {
      wrapStore: (store) =>
        withCreatePet(store, async (real, ...args) => {
          calls += 1
          entered.resolve()
          await release.promise
          return real.createPet(...args)
        }),
    })
    const a = post(app, REX, 'slow-one')
    await entered.promise

    const b = await post(app, REX, 'slow-one')
    assertAnswered(
      b,
      errorBody(
        409,
        'idempotency_key_in_progress',
        'a request with this Idempotency-Key is still in progress; retry later',
      ),
    )
    assert.equal(b.headers['retry-after'], '1')

    release.resolve()
    const first = await a
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['idempotent-replayed'], undefined)

    const retry = await post(app, REX, 'slow-one')
    assert.equal(retry.statusCode, 201)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.equal(retry.body, first.body)
    assert.equal(retry.headers.location, first.headers.location)
    assert.equal(calls, 1)
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets' })).body, `[${first.body}]`)
  })

  test('keys are scoped per API key: another API key with the same key creates its own pet', async (t) => {
    const app = await testApp(t)
    const other = await createApiKey(app.store, app.clock, 'second-client')
    const mine = await post(app, REX, 'shared-key')
    assert.equal(mine.statusCode, 201)

    const theirs = await post(app, REX, 'shared-key', other.key)
    assert.equal(theirs.statusCode, 201)
    assert.equal(theirs.headers['idempotent-replayed'], undefined)
    assert.equal(theirs.headers.location, '/v1/pets/2')
    assert.equal(theirs.body, rexPet(2))

    // Each API key still replays its own pet.
    const mineAgain = await post(app, REX, 'shared-key')
    assert.equal(mineAgain.headers['idempotent-replayed'], 'true')
    assert.equal(mineAgain.headers.location, '/v1/pets/1')
    const theirsAgain = await post(app, REX, 'shared-key', other.key)
    assert.equal(theirsAgain.headers['idempotent-replayed'], 'true')
    assert.equal(theirsAgain.headers.location, '/v1/pets/2')
    assert.equal((await allPets(app)).length, 2)
  })

  test('a key is kept 24 hours: replayed one second before, a new pet one second after', async (t) => {
    const app = await testApp(t)
    const first = await post(app, REX, 'daily')
    assert.equal(first.statusCode, 201)

    app.clock.advance(24 * HOUR_MS - 1000)
    const replay = await post(app, REX, 'daily')
    assert.equal(replay.statusCode, 201)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.body, first.body)

    app.clock.advance(2000)
    const fresh = await post(app, REX, 'daily')
    assert.equal(fresh.statusCode, 201)
    assert.equal(fresh.headers['idempotent-replayed'], undefined)
    assert.equal(fresh.headers.location, '/v1/pets/2')
    assert.equal((await allPets(app)).length, 2)

    // The new use of the key is itself replayed from now on.
    const replayOfFresh = await post(app, REX_REORDERED, 'daily')
    assert.equal(replayOfFresh.headers['idempotent-replayed'], 'true')
    assert.equal(replayOfFresh.body, fresh.body)
  })

  test('an expired key may be used with a different body', async (t) => {
    const app = await testApp(t)
    assert.equal((await post(app, REX, 'reused-tomorrow')).statusCode, 201)
    app.clock.advance(24 * HOUR_MS + 1000)
    const res = await post(app, '{"name":"Max","categoryId":3}', 'reused-tomorrow')
    assert.equal(res.statusCode, 201)
    assert.deepEqual(json(res), { id: 2, name: 'Max', categoryId: 3 })
  })

  test('a failed create is a bare 500 and releases the key, so a retry creates the pet', async (t) => {
    let failNext = true
    const app = await testApp(t, {
      wrapStore: (store) =>
        withCreatePet(store, async (real, ...args) => {
          if (failNext) {
            failNext = false
            throw new Error('SQLITE_IOERR: disk I/O error in /var/lib/petstore/petstore.db')
          }
          return real.createPet(...args)
        }),
    })
    const failed = await post(app, REX, 'retry-me')
    assert.equal(failed.statusCode, 500)
    assert.equal(
      failed.body,
      '{"code":"internal_error","message":"internal server error","status":500}',
    )
    assert.match(String(failed.headers['content-type']), /^application\/json/)
    assert.equal(failed.headers.location, undefined)

    const retry = await post(app, REX, 'retry-me')
    assert.equal(retry.statusCode, 201)
    assert.equal(retry.headers['idempotent-replayed'], undefined)
    assert.equal(retry.headers.location, '/v1/pets/1')
    const again = await post(app, REX, 'retry-me')
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.body, retry.body)
    assert.equal((await allPets(app)).length, 1)
  })

  test('an invalid Idempotency-Key header is 400 naming the header, and creates nothing', async (t) => {
    const app = await testApp(t)
    const cases: [string, string][] = [
      ['', "header 'idempotency-key' must be 1 to 255 characters long"],
      ['k'.repeat(256), "header 'idempotency-key' must be 1 to 255 characters long"],
      ['two words', "header 'idempotency-key' must be visible ASCII characters, without spaces"],
      ['clé', "header 'idempotency-key' must be visible ASCII characters, without spaces"],
      ['tab\there', "header 'idempotency-key' must be visible ASCII characters, without spaces"],
    ]
    for (const [key, message] of cases) {
      const res = await post(app, REX, key)
      assert.equal(res.statusCode, 400, JSON.stringify(key))
      assert.deepEqual(json(res), { code: 'invalid_request', message, status: 400 })
    }
    // The longest allowed key, of visible ASCII, is accepted.
    const longest = `${'k'.repeat(254)}~`
    const ok = await post(app, REX, longest)
    assert.equal(ok.statusCode, 201)
    assert.equal((await post(app, REX, longest)).headers['idempotent-replayed'], 'true')
    assert.equal((await allPets(app)).length, 1)
  })

  test('past the cap per API key the oldest completed key is forgotten, never one in flight', async (t) => {
    const entered = deferred()
    const release = deferred()
    const app = await testApp(t, {
      config: { idempotencyKeysPerApiKey: 3 },
      wrapStore: (store) =>
        withCreatePet(store, async (real, pet, completes) => {
          if (completes?.key === 'slow') {
            entered.resolve()
            await release.promise
          }
          return real.createPet(pet, completes)
        }),
    })
    const other = await createApiKey(app.store, app.clock, 'second-client')
    const body = (name: string) => `{"name":"${name}","categoryId":1}`
    const theirs = await post(app, body('theirs'), 'one', other.key)
    assert.equal(theirs.statusCode, 201)

    const slow = post(app, body('slow'), 'slow')
    await entered.promise
    const created = new Map<string, string>()
    for (const key of ['one', 'two', 'three']) {
      app.clock.advance(1000)
      const res = await post(app, body(key), key)
      assert.equal(res.statusCode, 201)
      created.set(key, res.body)
    }
    // Four records: the oldest completed one (`one`) went; the one in flight stays.
    const inFlight = await post(app, body('slow'), 'slow')
    assert.equal(inFlight.statusCode, 409)
    release.resolve()
    const first = await slow
    assert.equal(first.statusCode, 201)
    for (const key of ['two', 'three']) {
      const retry = await post(app, body(key), key)
      assert.equal(retry.headers['idempotent-replayed'], 'true', key)
      assert.equal(retry.body, created.get(key))
    }
    const slowRetry = await post(app, body('slow'), 'slow')
    assert.equal(slowRetry.headers['idempotent-replayed'], 'true')
    assert.equal(slowRetry.body, first.body)
    // A retry of the forgotten key is a new create.
    const late = await post(app, body('one'), 'one')
    assert.equal(late.statusCode, 201)
    assert.equal(late.headers['idempotent-replayed'], undefined)
    assert.notEqual(late.body, created.get('one'))
    assert.equal((await allPets(app)).length, 6)
    // Another API key's records are its own.
    const theirsRetry = await post(app, body('theirs'), 'one', other.key)
    assert.equal(theirsRetry.headers['idempotent-replayed'], 'true')
    assert.equal(theirsRetry.body, theirs.body)
  })

  test('the hourly purge deletes records past their 24 hours and keeps younger ones', async (t) => {
    const app = await testApp(t)
    const service = new PetService(app.store, app.clock)
    const old = await post(app, REX, 'old')
    assert.equal(old.statusCode, 201)
    app.clock.advance(23 * HOUR_MS)
    const young = await post(app, REX, 'young')
    assert.equal(young.statusCode, 201)
    assert.equal(await service.purgeExpiredIdempotencyKeys(), 0)

    app.clock.advance(HOUR_MS + 1000)
    assert.equal(await service.purgeExpiredIdempotencyKeys(), 1)
    assert.equal(await service.purgeExpiredIdempotencyKeys(), 0)
    const replay = await post(app, REX, 'young')
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.body, young.body)

    app.clock.advance(24 * HOUR_MS)
    assert.equal(await service.purgeExpiredIdempotencyKeys(), 1)
  })

  test('a request with an invalid body leaves no record behind for its key', async (t) => {
    const app = await testApp(t)
    for (const invalid of [
      '{"name":"","categoryId":1}',
      '{"id":5,"name":"Rex","categoryId":1}',
      '{"name":"Rex","categoryId":1.0}',
      '{"name":"Rex"',
    ]) {
      const res = await post(app, invalid, 'first-try')
      assert.equal(res.statusCode, 400, invalid)
    }
    // Had any of those claimed the key, this different body would be 422 or a replay.
    const res = await post(app, '{"name":"Bella","categoryId":2,"status":"sold"}', 'first-try')
    assert.equal(res.statusCode, 201)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assert.deepEqual(json(res), { id: 1, name: 'Bella', categoryId: 2, status: 'sold' })
  })
})
