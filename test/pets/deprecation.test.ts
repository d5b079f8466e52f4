// getPet is deprecated: its headers on every response, the 410 from the sunset on, and the
// per-key count of who still calls it.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { createPet, json, openTestStore, tempDir, testApp } from '../support/app.js'
import { assertAnswered, errorBody, NO_KEY } from '../support/errors.js'

const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'
const SUCCESSOR = '</v1/pets>; rel="successor-version"'
/** 2025-12-05T00:00:00Z, the documented default of PETSTORE_GETPET_DEPRECATED_AT. */
const DEFAULT_DEPRECATION = '@1764892800'

function assertDeprecationHeaders(res: LightMyRequestResponse, deprecation = DEFAULT_DEPRECATION) {
  assert.equal(res.headers.sunset, SUNSET)
  assert.equal(res.headers.deprecation, deprecation)
  assert.equal(res.headers.link, SUCCESSOR)
}

function assertNoDeprecationHeaders(res: LightMyRequestResponse) {
  assert.equal(res.headers.sunset, undefined)
  assert.equal(res.headers.deprecation, undefined)
  assert.equal(String(res.headers.link ?? '').includes('successor-version'), false)
}

describe('getPet deprecation headers', () => {
  test('200 carries Sunset, Deprecation and the successor link', async (t) => {
    const app = await testApp(t)
    const created = await createPet(app, { name: 'Rex', categoryId: 7 })
    assert.equal(created.statusCode, 201)
    const res = await app.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), { id: 1, name: 'Rex', categoryId: 7 })
    assertDeprecationHeaders(res)
  })

  test('404, 400 and 401 carry them too', async (t) => {
    const app = await testApp(t)
    const missing = await app.call({ method: 'GET', url: '/v1/pets/999' })
    assertAnswered(missing, errorBody(404, 'not_found', 'no pet with id 999'))
    assertDeprecationHeaders(missing)

    const invalid = await app.call({ method: 'GET', url: '/v1/pets/abc' })
    assertAnswered(
      invalid,
      errorBody(400, 'invalid_request', "path parameter 'petId' must be a 64-bit integer"),
    )
    assertDeprecationHeaders(invalid)

    const anonymous = await app.app.inject({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(anonymous.statusCode, 401)
    assert.deepEqual(json(anonymous), NO_KEY)
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="petstore"')
    assertDeprecationHeaders(anonymous)

    const badKey = await app.app.inject({
      method: 'GET',
      url: '/v1/pets/1',
      headers: { authorization: 'Bearer not-a-valid-key' },
    })
    assert.equal(badKey.statusCode, 401)
    assert.equal(
      badKey.headers['www-authenticate'],
      'Bearer realm="petstore", error="invalid_token"',
    )
    assertDeprecationHeaders(badKey)
  })

  test('the Deprecation instant comes from configuration', async (t) => {
    const app = await testApp(t, { config: { deprecatedAt: new Date('2026-03-01T00:00:00Z') } })
    const res = await app.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.statusCode, 404)
    assertDeprecationHeaders(res, '@1772323200')
  })

  test('listPets and createPet carry none of them', async (t) => {
    const app = await testApp(t)
    const created = await createPet(app, { name: 'Rex', categoryId: 7 })
    assert.equal(created.statusCode, 201)
    assertNoDeprecationHeaders(created)
    assert.equal(created.headers.link, undefined)

    const invalid = await createPet(app, { name: 'Rex' })
    assert.equal(invalid.statusCode, 400)
    assertNoDeprecationHeaders(invalid)

    const list = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(list.statusCode, 200)
    assertNoDeprecationHeaders(list)
    assert.equal(list.headers.link, undefined)

    assert.equal((await createPet(app, { name: 'Max', categoryId: 7 })).statusCode, 201)
    const firstPage = await app.call({ method: 'GET', url: '/v1/pets?limit=1' })
    assert.equal(firstPage.statusCode, 200)
    assertNoDeprecationHeaders(firstPage)
    assert.match(String(firstPage.headers.link), /^<[^>]+>; rel="next"$/)

    const anonymous = await app.app.inject({ method: 'GET', url: '/v1/pets' })
    assert.equal(anonymous.statusCode, 401)
    assertNoDeprecationHeaders(anonymous)
  })
})

describe('getPet sunset', () => {
  test('one millisecond before the sunset it still answers', async (t) => {
    const app = await testApp(t, { now: new Date('2030-12-04T23:59:59.999Z') })
    assert.equal((await createPet(app, { name: 'Rex', categoryId: 7 })).statusCode, 201)
    const res = await app.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), { id: 1, name: 'Rex', categoryId: 7 })
    assertDeprecationHeaders(res)
  })

  test('from the sunset instant on it is 410 gone', async (t) => {
    const app = await testApp(t)
    assert.equal((await createPet(app, { name: 'Rex', categoryId: 7 })).statusCode, 201)
    app.clock.set(new Date('2030-12-04T23:59:59.999Z'))
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets/1' })).statusCode, 200)

    app.clock.set(new Date('2030-12-05T00:00:00Z'))
    for (const url of ['/v1/pets/1', '/v1/pets/999']) {
      const res = await app.call({ method: 'GET', url })
      assert.equal(res.statusCode, 410, url)
      assert.equal(
        res.body,
        '{"code":"gone","message":"getPet was removed on 2030-12-05; use GET /v1/pets","status":410}',
      )
      assertDeprecationHeaders(res)
    }
    // The successor still works.
    const list = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(list.statusCode, 200)
    assert.deepEqual(json(list), [{ id: 1, name: 'Rex', categoryId: 7 }])
  })

  test('after the sunset an unauthenticated call is still 401: authentication comes first', async (t) => {
    const app = await testApp(t, { now: new Date('2031-01-01T00:00:00Z') })
    const res = await app.app.inject({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), NO_KEY)
    assertDeprecationHeaders(res)
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets/1' })).statusCode, 410)
  })
})

describe('getPet call counting', () => {
  async function loggedApp(t: TestContext, config: Partial<Config> = {}) {
    const lines: string[] = []
    const { store } = await openTestStore(t, tempDir(t), {})
    const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
    const alice = await createApiKey(store, clock, 'alice-app')
    const bob = await createApiKey(store, clock, 'bob-app')
    const app = await buildApp({
      config: configWith(config),
      store,
      clock,
      logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } },
    })
    await app.ready()
    t.after(async () => {
      await app.close()
      await store.close()
    })
    const get = (key: string, url = '/v1/pets/1') =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } })
    const warnings = () =>
      lines
        .map((line) => JSON.parse(line) as Partial<DeprecatedCallLine>)
        .filter((entry) => entry.msg === 'deprecated operation called')
        .map(({ level, deprecatedOperation, apiKeyId, apiKeyName, callsByKey }) => ({
          level,
          deprecatedOperation,
          apiKeyId,
          apiKeyName,
          callsByKey,
        }))
    return { app, clock, lines, alice, bob, get, warnings }
  }

  interface DeprecatedCallLine {
    msg: string
    level: number
    deprecatedOperation: string
    apiKeyId: string
    apiKeyName: string
    callsByKey: number
  }

  test("a key's first call is logged at once, later ones once per interval with the running count", async (t) => {
    const { app, clock, alice, bob, get, warnings } = await loggedApp(t)
    const created = await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      payload: '{"name":"Rex","categoryId":7}',
    })
    assert.equal(created.statusCode, 201)
    const line = (key: typeof alice, name: string, callsByKey: number) => ({
      level: 40,
      deprecatedOperation: 'getPet',
      apiKeyId: key.record.id,
      apiKeyName: name,
      callsByKey,
    })

    assert.equal((await get(alice.key)).statusCode, 200)
    assert.equal((await get(alice.key, '/v1/pets/999')).statusCode, 404)
    assert.equal((await get(bob.key)).statusCode, 200)
    // Neither a failed authentication nor another operation is counted.
    assert.equal(
      (await get('pet_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).statusCode,
      401,
    )
    assert.equal(
      (
        await app.inject({
          method: 'GET',
          url: '/v1/pets',
          headers: { authorization: `Bearer ${bob.key}` },
        })
      ).statusCode,
      200,
    )
    // Alice's second call (the 404) is counted but not logged: her first line is a second old.
    assert.deepEqual(warnings(), [line(alice, 'alice-app', 1), line(bob, 'bob-app', 1)])

    clock.advance(59_999)
    assert.equal((await get(alice.key)).statusCode, 200)
    assert.equal(warnings().length, 2)
    clock.advance(1)
    assert.equal((await get(alice.key)).statusCode, 200)
    assert.equal((await get(alice.key)).statusCode, 200)
    assert.deepEqual(warnings(), [
      line(alice, 'alice-app', 1),
      line(bob, 'bob-app', 1),
      line(alice, 'alice-app', 4),
    ])
  })

  test('PETSTORE_DEPRECATED_CALL_LOG_INTERVAL=0s logs every call', async (t) => {
    const { alice, get, warnings } = await loggedApp(t, { deprecatedCallLogIntervalMs: 0 })
    assert.equal((await get(alice.key)).statusCode, 404)
    assert.equal((await get(alice.key)).statusCode, 404)
    assert.equal((await get(alice.key)).statusCode, 404)
    assert.deepEqual(
      warnings().map((w) => w.callsByKey),
      [1, 2, 3],
    )
  })

  test('no log line contains a key or an Authorization header value', async (t) => {
    const { app, lines, alice, bob, get } = await loggedApp(t)
    const bogus = 'pet_0123456789ab_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'
    const configured = 'some-operator-key-not-stored-anywhere'
    await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      payload: '{"name":"Rex","categoryId":7}',
    })
    await get(alice.key)
    await get(bob.key, '/v1/pets/abc')
    await get(bogus)
    await get(configured)
    await app.inject({
      method: 'GET',
      url: '/v1/pets',
      headers: { authorization: 'Basic dXNlcjpwYXNz' },
    })
    await app.inject({
      method: 'GET',
      url: '/v1/nowhere',
      headers: { authorization: `Bearer ${bob.key}` },
    })

    assert.ok(lines.length >= 7, `expected request log lines, got ${lines.length}`)
    const secrets = [alice.key, bob.key, bogus, configured, 'dXNlcjpwYXNz']
    // The secret part of a key (after its id) must not leak either.
    secrets.push(...[alice.key, bob.key].map((k) => k.slice('pet_000000000000_'.length)))
    for (const line of lines) {
      for (const secret of secrets) {
        assert.equal(line.includes(secret), false, `a log line leaks ${secret}: ${line}`)
      }
      assert.equal(
        /authorization/i.test(line),
        false,
        `a log line has an Authorization header: ${line}`,
      )
    }
  })
})
