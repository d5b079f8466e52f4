// The read caches (remembered API keys, serialized list pages and pets) are invisible: a cached
// answer is byte for byte a fresh one, and a commit by anyone, this process or another connection
// to the same database, is seen by the very next request. Runs on both stores.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createPet, json, type TestApp, testApp } from '../support/app.js'
import { TEST_STORE } from '../support/postgres.js'

async function seedPets(a: TestApp, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    assert.equal((await createPet(a, { name: `pet ${i}`, categoryId: i })).statusCode, 201)
  }
}

describe(`read caches over ${TEST_STORE}`, () => {
  test('a repeated page is the same bytes and headers as the first answer', async (t) => {
    const a = await testApp(t)
    await seedPets(a, 3)
    const first = await a.call({ method: 'GET', url: '/v1/pets?limit=2&status=available' })
    const second = await a.call({ method: 'GET', url: '/v1/pets?limit=2&status=available' })
    const noStatus = await a.call({ method: 'GET', url: '/v1/pets?limit=2' })
    for (const res of [first, second, noStatus]) assert.equal(res.statusCode, 200)
    assert.equal(second.body, first.body)
    assert.equal(second.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(second.headers.link, first.headers.link)
    assert.equal(second.headers['content-length'], String(Buffer.byteLength(first.body)))
    assert.equal(first.body, '[]')
    assert.equal(
      noStatus.body,
      '[{"id":1,"name":"pet 0","categoryId":0},{"id":2,"name":"pet 1","categoryId":1}]',
    )
    assert.equal(
      noStatus.headers.link,
      '<http://localhost:80/v1/pets?limit=2&cursor=djE6Mg>; rel="next"',
    )
  })

  test('the next page request after a create through the API shows the new pet', async (t) => {
    const a = await testApp(t)
    await seedPets(a, 1)
    const before = await a.call({ method: 'GET', url: '/v1/pets?limit=5' })
    assert.equal((json(before) as unknown[]).length, 1)
    await seedPets(a, 1)
    const after = await a.call({ method: 'GET', url: '/v1/pets?limit=5' })
    assert.deepEqual(
      (json(after) as { name: string }[]).map((p) => p.name),
      ['pet 0', 'pet 0'],
    )
  })

  test('a pet committed by another connection is on the next page request', async (t) => {
    const a = await testApp(t)
    await seedPets(a, 1)
    const url = '/v1/pets?limit=1'
    const before = await a.call({ method: 'GET', url })
    assert.equal(before.headers.link, undefined)
    await a.sql(
      "INSERT INTO pets (name, category_id, status, created_at) VALUES ('from elsewhere', 9, 'sold', 0)",
    )
    const after = await a.call({ method: 'GET', url })
    assert.equal(after.body, '[{"id":1,"name":"pet 0","categoryId":0}]')
    assert.equal(
      after.headers.link,
      '<http://localhost:80/v1/pets?limit=1&cursor=djE6MQ>; rel="next"',
    )
    const next = await a.call({ method: 'GET', url: '/v1/pets?limit=1&cursor=djE6MQ' })
    assert.equal(next.body, '[{"id":2,"name":"from elsewhere","categoryId":9,"status":"sold"}]')
  })

  test('a pet read again is the same bytes; a change by another connection shows at once', async (t) => {
    const a = await testApp(t)
    await seedPets(a, 2)
    const first = await a.call({ method: 'GET', url: '/v1/pets/2' })
    const second = await a.call({ method: 'GET', url: '/v1/pets/2' })
    for (const res of [first, second]) {
      assert.equal(res.statusCode, 200)
      assert.equal(res.body, '{"id":2,"name":"pet 1","categoryId":1}')
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(res.headers['content-length'], '38')
    }
    await a.sql("UPDATE pets SET name = 'renamed', status = 'sold' WHERE id = ?", 2)
    const after = await a.call({ method: 'GET', url: '/v1/pets/2' })
    assert.equal(after.body, '{"id":2,"name":"renamed","categoryId":1,"status":"sold"}')
    await a.sql('DELETE FROM pets WHERE id = ?', 2)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets/2' })).statusCode, 404)
  })

  test('a key revoked by another connection is refused on its next request', async (t) => {
    const a = await testApp(t)
    for (let i = 0; i < 3; i++) {
      assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    }
    await a.sql('UPDATE api_keys SET revoked_at = 1 WHERE id = ?', a.keyId)
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore", error="invalid_token"')
  })

  test('the requests of one turn after a change look their key up once', async (t) => {
    const lookups: string[] = []
    const a = await testApp(t, {
      wrapStore: (store) =>
        Object.assign(Object.create(store), {
          findApiKey: (id: string, deadline?: number) => {
            lookups.push(id)
            return store.findApiKey(id, deadline)
          },
        }),
    })
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    assert.deepEqual(lookups, [a.keyId])
    // Another connection's commit moves the version: the key is checked again, once for all 8.
    await a.sql("UPDATE api_keys SET name = 'renamed' WHERE id = ?", a.keyId)
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => a.call({ method: 'GET', url: '/v1/pets' })),
    )
    assert.deepEqual(
      answers.map((res) => res.statusCode),
      Array(8).fill(200),
    )
    assert.deepEqual(lookups, [a.keyId, a.keyId])
  })

  test('a remembered key still expires at its instant', async (t) => {
    const a = await testApp(t)
    const expiresAt = a.clock.now().getTime() + 1000
    await a.sql('UPDATE api_keys SET expires_at = ? WHERE id = ?', expiresAt, a.keyId)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    a.clock.set(new Date(expiresAt))
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 401)
  })

  test('an empty cursor is an error even once the first page is cached', async (t) => {
    const a = await testApp(t)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    const res = await a.call({ method: 'GET', url: '/v1/pets?cursor=' })
    assert.equal(res.statusCode, 400)
  })

  test('a store that cannot give its data version is simply not cached over', async (t) => {
    let failing = false
    const a = await testApp(t, {
      wrapStore: (store) =>
        Object.assign(Object.create(store), {
          dataVersion: () =>
            failing
              ? Promise.reject(new Error('the data version cannot be read'))
              : store.dataVersion(),
        }),
    })
    await seedPets(a, 1)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    failing = true
    assert.equal((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
    await seedPets(a, 1)
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 200)
    assert.equal((json(res) as unknown[]).length, 2)
  })
})
