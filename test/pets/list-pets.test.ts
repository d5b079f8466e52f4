import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { encodeCursor } from '../../src/pets/cursor.js'
import type { PetStatus } from '../../src/storage/store.js'
import { createPet, json, type TestApp, testApp } from '../support/app.js'

interface PetJson {
  id: number
  name: string
  categoryId: number
  status?: PetStatus
}

async function seed(a: TestApp, count: number, statusOf: (i: number) => PetStatus | undefined) {
  const pets: PetJson[] = []
  for (let i = 1; i <= count; i++) {
    const status = statusOf(i)
    const res = await createPet(a, {
      name: `pet-${i}`,
      categoryId: i,
      ...(status ? { status } : {}),
    })
    assert.equal(res.statusCode, 201)
    pets.push(json(res) as PetJson)
  }
  return pets
}

function nextLink(res: { headers: Record<string, unknown> }): string | null {
  const link = res.headers.link
  if (link === undefined) return null
  const m = /^<([^>]+)>; rel="next"$/.exec(String(link))
  assert.ok(m, `unexpected Link header: ${String(link)}`)
  return m[1]!
}

/** Walks every page from `url`, returning the pets and the number of pages. */
async function walk(a: TestApp, url: string, between?: () => Promise<void>) {
  const seen: PetJson[] = []
  let pages = 0
  let next: string | null = url
  while (next !== null) {
    const u: URL = new URL(next, 'http://localhost:80')
    const res = await a.call({ method: 'GET', url: `${u.pathname}${u.search}` })
    assert.equal(res.statusCode, 200)
    seen.push(...(json(res) as PetJson[]))
    pages++
    next = nextLink(res)
    if (between) await between()
  }
  return { seen, pages }
}

const badRequest = (message: string) => ({ code: 'invalid_request', message, status: 400 })

describe('listPets', () => {
  test('empty catalogue: 200, [] and no next link', async (t) => {
    const a = await testApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '[]')
    assert.equal(res.headers.link, undefined)
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  })

  test('default limit is 20, ascending id, with a full-URL next link', async (t) => {
    const a = await testApp(t)
    const pets = await seed(a, 25, () => undefined)
    const res = await a.call({ method: 'GET', url: '/v1/pets', headers: { host: 'api.test:8080' } })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), pets.slice(0, 20))
    assert.equal(
      res.headers.link,
      `<http://api.test:8080/v1/pets?limit=20&cursor=${encodeCursor(20n)}>; rel="next"`,
    )
    const last = await a.call({ method: 'GET', url: `/v1/pets?cursor=${encodeCursor(20n)}` })
    assert.deepEqual(json(last), pets.slice(20))
    assert.equal(last.headers.link, undefined)
  })

  test('a Host that is no host[:port] is 400, so it never reaches the next link', async (t) => {
    const a = await testApp(t, { config: { productionUrl: 'https://api.pets.test/v1' } })
    await seed(a, 3, () => undefined)
    for (const host of ['a'.repeat(254), 'x.test/evil', '[::1', 'x.test:123456', '-evil']) {
      const res = await a.call({ method: 'GET', url: '/v1/pets?limit=1', headers: { host } })
      assert.equal(res.statusCode, 400, host)
      assert.deepEqual(json(res), {
        code: 'invalid_request',
        message:
          'the Host header must be a host name, an IPv4 address or a bracketed IPv6 address, with an optional port from 1 to 65535',
        status: 400,
      })
      assert.equal(res.headers.link, undefined)
    }
  })

  test('limit bounds: 1 and 100 are accepted', async (t) => {
    const a = await testApp(t)
    const pets = await seed(a, 3, () => undefined)
    const one = await a.call({ method: 'GET', url: '/v1/pets?limit=1' })
    assert.deepEqual(json(one), pets.slice(0, 1))
    assert.ok(nextLink(one))
    const hundred = await a.call({ method: 'GET', url: '/v1/pets?limit=100' })
    assert.deepEqual(json(hundred), pets)
    assert.equal(hundred.headers.link, undefined)
  })

  test('a page exactly filling the catalogue has no next link', async (t) => {
    const a = await testApp(t)
    await seed(a, 4, () => undefined)
    const res = await a.call({ method: 'GET', url: '/v1/pets?limit=4' })
    assert.equal((json(res) as unknown[]).length, 4)
    assert.equal(res.headers.link, undefined)
  })

  test('invalid limit is 400, never clamped', async (t) => {
    const a = await testApp(t)
    const message = "query parameter 'limit' must be an integer from 1 to 100"
    const values = [
      '0',
      '101',
      'abc',
      '1.5',
      '',
      '-1',
      '+5',
      '%205',
      '0x10',
      '1e1',
      '05',
      '99999999999999999999',
    ]
    for (const v of values) {
      const res = await a.call({ method: 'GET', url: `/v1/pets?limit=${v}` })
      assert.equal(res.statusCode, 400, `limit=${v}`)
      assert.deepEqual(json(res), badRequest(message), `limit=${v}`)
    }
    const repeated = await a.call({ method: 'GET', url: '/v1/pets?limit=1&limit=2' })
    assert.equal(repeated.statusCode, 400)
    assert.deepEqual(json(repeated), badRequest(message))
  })

  test('status filter: exact matches only; pets without status never match', async (t) => {
    const a = await testApp(t)
    const statuses: (PetStatus | undefined)[] = ['available', 'pending', 'sold', undefined]
    const pets = await seed(a, 12, (i) => statuses[i % 4])
    for (const s of ['available', 'pending', 'sold'] as const) {
      const res = await a.call({ method: 'GET', url: `/v1/pets?status=${s}` })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(
        json(res),
        pets.filter((p) => p.status === s),
      )
    }
  })

  test('invalid status is 400', async (t) => {
    const a = await testApp(t)
    const message = "query parameter 'status' must be one of: available, pending, sold"
    for (const q of ['status=lost', 'status=', 'status=AVAILABLE', 'status=sold&status=sold']) {
      const res = await a.call({ method: 'GET', url: `/v1/pets?${q}` })
      assert.equal(res.statusCode, 400, q)
      assert.deepEqual(
        json(res),
        badRequest(q.includes('&') ? "query parameter 'status' must be a string" : message),
        q,
      )
    }
  })

  test('unknown query parameters are ignored', async (t) => {
    const a = await testApp(t)
    const pets = await seed(a, 2, () => 'sold')
    const res = await a.call({ method: 'GET', url: '/v1/pets?color=red&page=3&status=sold' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), pets)
  })

  test('walking pages with a filter keeps the filter and limit in the link', async (t) => {
    const a = await testApp(t)
    const pets = await seed(a, 30, (i) => (i % 3 === 0 ? 'pending' : 'available'))
    const first = await a.call({ method: 'GET', url: '/v1/pets?status=pending&limit=4' })
    const link = nextLink(first)!
    assert.equal(
      link,
      `http://localhost:80/v1/pets?limit=4&status=pending&cursor=${encodeCursor(12n)}`,
    )
    const { seen, pages } = await walk(a, '/v1/pets?status=pending&limit=4')
    assert.deepEqual(
      seen,
      pets.filter((p) => p.status === 'pending'),
    )
    assert.equal(pages, 3)
  })

  test('every pet exactly once while others insert during the walk', async (t) => {
    const a = await testApp(t)
    const before = await seed(a, 45, (i) => (i % 2 ? 'available' : undefined))
    let n = 0
    const { seen } = await walk(a, '/v1/pets?limit=7', async () => {
      // Inserts between pages land after every existing id, so none is skipped or repeated.
      for (let k = 0; k < 3; k++) {
        n++
        assert.equal(
          (await createPet(a, { name: `late-${n}`, categoryId: 1000 + n })).statusCode,
          201,
        )
      }
    })
    const ids = seen.map((p) => p.id)
    assert.equal(new Set(ids).size, ids.length, 'no pet seen twice')
    assert.deepEqual(seen.slice(0, 45), before)
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => x - y),
    )
  })

  test('malformed cursors are 400', async (t) => {
    const a = await testApp(t)
    const message = "query parameter 'cursor' is malformed: use the Link of the previous page"
    const forged = [
      'abc',
      '',
      '!!!',
      Buffer.from('v1:-5').toString('base64url'),
      Buffer.from('v1:9223372036854775808').toString('base64url'),
      Buffer.from('v2:5').toString('base64url'),
      `${encodeCursor(5n)}=`,
    ]
    for (const c of forged) {
      const res = await a.call({ method: 'GET', url: `/v1/pets?cursor=${encodeURIComponent(c)}` })
      assert.equal(res.statusCode, 400, c)
      assert.deepEqual(json(res), badRequest(message), c)
    }
  })

  test('HEAD answers like GET without a body', async (t) => {
    const a = await testApp(t)
    await seed(a, 1, () => undefined)
    const res = await a.call({ method: 'HEAD', url: '/v1/pets' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '')
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  })
})
