// A walk through a large catalogue outlasts the key's rate limit: after `petstore seed --count
// 20000`, with a small budget per window, the client's paging waits out each 429's Retry-After
// and reaches the last pet, and so does the example program.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createPetstoreClient, type Pet } from '../../client/index.js'
import { freshPostgresUrl, TEST_STORE } from '../support/postgres.js'
import { type StartedService, spawnService } from '../support/process.js'
import { workspace } from '../support/workspace.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const EXAMPLE = join(ROOT, 'examples', 'pets-client.ts')
const API_KEY = 'paging-test-key-0123456789'
const COUNT = 20_000
// 100 requests per 2-second window: a 429's Retry-After is at most 2 s.
const BUDGET = 100
const LIMITS = { PETSTORE_RATE_LIMIT_MAX: String(BUDGET), PETSTORE_RATE_LIMIT_WINDOW: '2s' }
// The page requests before which the key's budget is spent, as another client of the key would.
const CROWDED_PAGES = new Set([1, 100])
const STATUSES = ['available', 'pending', 'sold', undefined] as const

/** The n-th seeded pet, as `petstore seed` documents it (status mixed). */
function seededPet(n: number): Pet {
  const categoryId = n % 10 === 0 ? 2n ** 53n + 1n + BigInt(n) : BigInt((n % 100) + 1)
  const status = STATUSES[(n - 1) % 4]
  return { id: BigInt(n), name: `pet-${n}`, categoryId, ...(status ? { status } : {}) }
}

/** `petstore serve` on a store of this run's kind holding COUNT seeded pets. */
async function seededService(t: TestContext): Promise<StartedService> {
  const w = workspace(t)
  const db: Record<string, string> =
    TEST_STORE === 'postgres' ? { PETSTORE_DATABASE_URL: await freshPostgresUrl(t) } : {}
  const seeded = await w.run(['seed', '--count', String(COUNT)], db)
  assert.equal(seeded.code, 0, seeded.stderr)
  return w.start([], {
    ...db,
    ...LIMITS,
    PETSTORE_API_KEYS: API_KEY,
    PETSTORE_LOG_LEVEL: 'warn',
  })
}

/**
 * A fetch for the walk: before each crowded page request, the same request is sent by a burst of
 * other clients of the key until the service refuses one, and that real 429 is the walk's answer.
 * So the walk meets 429 whatever the machine's speed; it records each status it was answered.
 */
function crowdedFetch() {
  const statuses: number[] = []
  let pages = 0
  const crowdedFetch = async (request: Request): Promise<Response> => {
    if (CROWDED_PAGES.has(++pages)) {
      for (;;) {
        const burst = await Promise.all(
          Array.from({ length: BUDGET + 1 }, () => fetch(request.clone())),
        )
        const refused = burst.find((res) => res.status === 429)
        await Promise.all(burst.filter((res) => res !== refused).map((res) => res.text()))
        if (refused) {
          statuses.push(refused.status)
          return refused
        }
      }
    }
    const res = await fetch(request)
    statuses.push(res.status)
    return res
  }
  return { statuses, fetch: crowdedFetch }
}

const show = (pet: Pet) =>
  `#${pet.id} ${pet.name} (category ${pet.categoryId}, ${pet.status ?? 'no status'})`

test('after a 20,000-pet seed, listAllPets and the example walk through 429s to the last pet', async (t) => {
  const service = await seededService(t)
  const baseUrl = `${service.origin}/v1`
  const seeded = Array.from({ length: COUNT }, (_, i) => seededPet(i + 1))

  const crowded = crowdedFetch()
  const client = createPetstoreClient({ baseUrl, apiKey: API_KEY, fetch: crowded.fetch })
  const walked: Pet[] = []
  for await (const pet of client.listAllPets({ limit: 100 })) walked.push(pet)
  assert.equal(walked.length, COUNT)
  assert.deepEqual(walked, seeded)
  // Each 429 was waited out and its page asked for again: 200 pages answered 200, after the
  // crowded pages' refusals and any the walk met by outrunning the budget itself.
  assert.equal(crowded.statuses.filter((status) => status === 200).length, COUNT / 100)
  assert.ok(crowded.statuses.filter((status) => status === 429).length >= CROWDED_PAGES.size)
  assert.deepEqual(new Set(crowded.statuses), new Set([200, 429]))

  const example = spawnService(t, {
    command: process.execPath,
    args: ['--import', 'tsx', EXAMPLE],
    cwd: ROOT,
    env: { PETSTORE_URL: baseUrl, PETSTORE_KEY: API_KEY },
    timeout: 5 * 60_000,
  })
  assert.deepEqual(await example.exited, { code: 0, signal: null }, example.stderr())
  assert.equal(example.stderr(), '')
  const created: Pet[] = [
    { id: 20_001n, name: 'Rex', categoryId: 1n, status: 'available' },
    { id: 20_002n, name: 'Luna', categoryId: 9223372036854775807n, status: 'pending' },
    { id: 20_003n, name: 'Milo', categoryId: -9223372036854775808n, status: 'sold' },
    { id: 20_004n, name: 'Bella', categoryId: 2n },
    { id: 20_005n, name: 'Max', categoryId: 3n, status: 'available' },
  ]
  const all = [...seeded, ...created]
  const expected = [
    'first page: 10 pets',
    ...seeded.slice(0, 10).map((p) => `  ${show(p)}`),
    ...created.map((p) => `created ${show(p)} at /v1/pets/${p.id}`),
    'all pets, 100 per page:',
    ...all.map((p) => `  ${show(p)}`),
    'available pets:',
    ...all.filter((p) => p.status === 'available').map((p) => `  ${show(p)}`),
    '',
  ]
  assert.deepEqual(example.stdout().split('\n'), expected)
})
