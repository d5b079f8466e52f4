// Durability and draining of the real process: `node dist/main.js serve` on a real socket,
// killed with SIGKILL under load, and stopped with SIGTERM while a request is still arriving.

import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { parse } from 'lossless-json'
import { listAllPets } from '../support/api.js'
import {
  assertDraining,
  halfSentCreate,
  openConnection,
  READYZ,
  readiness,
  SHUTTING_DOWN,
} from '../support/drain.js'
import { forStore } from '../support/stores.js'
import { listenerClosed } from '../support/wait.js'
import { workspace } from '../support/workspace.js'

const KEY = 'durability-test-key-0123456789'
const AUTH = { authorization: `Bearer ${KEY}` }

/** A workspace whose servers take the key and have no rate limit. */
const harness = (t: TestContext) =>
  workspace(t, { PETSTORE_API_KEYS: KEY, PETSTORE_RATE_LIMIT_MAX: '100000000' })

interface ListedPet {
  id: bigint
  name: string
  categoryId: bigint
  status?: string
}

/** Parses a JSON body with every number as a BigInt, so int64 values keep all their digits. */
function parseExact(text: string): unknown {
  return parse(text, null, (literal) => BigInt(literal))
}

const INT64_MAX = '9223372036854775807'
const INT64_MIN = '-9223372036854775808'
const CATEGORY_IDS = [INT64_MAX, INT64_MIN, '9007199254740993', '-9007199254740993', '0']
const STATUSES = [undefined, 'available', 'pending', 'sold'] as const

interface PetRequest {
  name: string
  categoryId: string
  status: (typeof STATUSES)[number]
  body: string
}

/** Request `i` of client `w`: a name no other request uses, and a mix of int64 values and statuses. */
function petRequest(w: number, i: number): PetRequest {
  const name = i % 7 === 3 ? `Rex "${w}-${i}" Grüße 🐕` : `client-${w}-pet-${i}`
  const categoryId = i % 6 === 5 ? String(w * 1_000_000 + i) : CATEGORY_IDS[i % 6]!
  const status = STATUSES[(i + w) % 4]
  const statusField = status === undefined ? '' : `,"status":"${status}"`
  return {
    name,
    categoryId,
    status,
    body: `{"name":${JSON.stringify(name)},"categoryId":${categoryId}${statusField}}`,
  }
}

function expectedPet(id: bigint, r: PetRequest): ListedPet {
  const pet: ListedPet = { id, name: r.name, categoryId: BigInt(r.categoryId) }
  if (r.status !== undefined) pet.status = r.status
  return pet
}

forStore('sqlite', () => {
  describe('durability of the real process', () => {
    test('every pet answered with 201 survives SIGKILL under load, exactly as answered', {
      timeout: 120_000,
    }, async (t) => {
      const h = harness(t)
      const server = await h.start()
      const CLIENTS = 16
      const KILL_AFTER_CREATES = 400

      const attempted = new Map<string, PetRequest>()
      const created = new Map<bigint, PetRequest>()
      const unexpected: string[] = []
      let killed = false
      const kill = () => {
        if (killed) return
        killed = true
        server.child.kill('SIGKILL')
      }

      const client = async (w: number) => {
        for (let i = 0; !killed; i++) {
          const r = petRequest(w, i)
          attempted.set(r.name, r)
          let res: Response
          let text: string
          try {
            res = await fetch(`${server.origin}/v1/pets`, {
              method: 'POST',
              headers: { ...AUTH, 'content-type': 'application/json' },
              body: r.body,
            })
            text = await res.text()
          } catch {
            return // the process is gone; this request may or may not have been stored
          }
          const id = /^\{"id":([1-9][0-9]*),/.exec(text)?.[1]
          const statusField = r.status === undefined ? '' : `,"status":"${r.status}"`
          const expectedText = `{"id":${id},"name":${JSON.stringify(r.name)},"categoryId":${r.categoryId}${statusField}}`
          if (
            res.status !== 201 ||
            id === undefined ||
            text !== expectedText ||
            res.headers.get('location') !== `/v1/pets/${id}`
          ) {
            unexpected.push(`${res.status} ${res.headers.get('location')} ${text} for ${r.body}`)
            kill()
            return
          }
          created.set(BigInt(id), r)
          if (created.size === KILL_AFTER_CREATES) kill()
        }
      }
      await Promise.all(Array.from({ length: CLIENTS }, (_, w) => client(w)))
      assert.deepEqual(unexpected, [])
      assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' })
      assert.ok(created.size >= KILL_AFTER_CREATES, `only ${created.size} pets were created`)

      const restarted = await h.start()
      const pets = await listAllPets<ListedPet>(restarted, KEY, { parse: parseExact })

      const ids = pets.map((p) => p.id)
      assert.equal(new Set(ids).size, ids.length, 'ids are unique')
      assert.ok(
        ids.every((id, i) => i === 0 || id > ids[i - 1]!),
        'the list is in ascending id order',
      )
      const byId = new Map(pets.map((p) => [p.id, p]))
      for (const [id, r] of created) {
        assert.deepEqual(byId.get(id), expectedPet(id, r), `pet ${id} answered with 201`)
      }
      const names = new Set<string>()
      for (const pet of pets) {
        const r = attempted.get(pet.name)
        assert.ok(r, `pet ${pet.id} (${pet.name}) was never requested`)
        assert.ok(!names.has(pet.name), `one request stored twice: ${pet.name}`)
        names.add(pet.name)
        assert.deepEqual(pet, expectedPet(pet.id, r))
      }
      // Pets beyond the 201s can only come from requests cut off by the kill, one per client at most.
      assert.ok(
        pets.length - created.size <= CLIENTS,
        `${pets.length} pets for ${created.size} 201s`,
      )
    })

    test('SIGTERM: readiness turns 503, an in-flight request completes with 201, exit code 0', {
      timeout: 60_000,
    }, async (t) => {
      const h = harness(t)
      // Long enough for the readiness probe below to be answered before the listener closes.
      const server = await h.start([], { PETSTORE_DRAIN_DELAY: '3s', PETSTORE_LOG_LEVEL: 'info' })

      const probe = await openConnection(t, server.port)
      const ready = await readiness(probe)
      assert.equal(ready.status, 200)
      assert.equal(ready.headers.connection, 'keep-alive')
      assert.deepEqual(JSON.parse(ready.body), { status: 'ready' })

      const body = `{"name":"Drained","categoryId":${INT64_MAX},"status":"pending"}`
      const create = await halfSentCreate(t, server.port, KEY, body)

      server.child.kill('SIGTERM')
      await server.waitFor(/"msg":"draining before exit"/)

      assertDraining(await readiness(probe))

      // Until the listener closes, traffic that still arrives is served, and told to go elsewhere.
      const late = await openConnection(t, server.port)
      late.write(`GET /v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: Bearer ${KEY}\r\n\r\n`)
      const served = await late.next()
      assert.equal(served.status, 200)
      assert.equal(served.headers.connection, 'close')
      assert.equal(served.body, '[]')

      await listenerClosed(server.port)
      // The rest of the body, then a request pipelined behind it on the same connection: it arrives
      // while the server is closing and still gets the Error body (not the framework's own 503).
      create.rest(READYZ)
      const createdRes = await create.upload.next()
      const expected = `{"id":1,"name":"Drained","categoryId":${INT64_MAX},"status":"pending"}`
      assert.equal(createdRes.status, 201, createdRes.body)
      assert.equal(createdRes.headers.location, '/v1/pets/1')
      assert.equal(createdRes.body, expected)
      const pipelined = await create.upload.next()
      assert.equal(pipelined.status, 503)
      assert.equal(pipelined.headers['content-type'], 'application/json; charset=utf-8')
      assert.deepEqual(JSON.parse(pipelined.body), SHUTTING_DOWN)

      assert.deepEqual(await server.exited, { code: 0, signal: null })
      assert.equal(server.stderr(), '')

      const restarted = await h.start()
      const res = await fetch(`${restarted.origin}/v1/pets`, { headers: AUTH })
      assert.equal(res.status, 200)
      assert.equal(await res.text(), `[${expected}]`)
    })
  })
})
