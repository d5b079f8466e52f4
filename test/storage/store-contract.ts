// The behaviour every storage adapter must show. Each adapter's test file runs this suite.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import type {
  ApiKeyRecord,
  DataVersion,
  IdempotencyClaimRequest,
  Pet,
  PetPageQuery,
  PetStatus,
  Store,
} from '../../src/storage/store.js'

export type OpenStore = (
  t: TestContext,
  opts?: { idempotencyKeysPerApiKey?: number },
) => Promise<Store>

const HOUR = 3_600_000
const NOW = new Date('2026-03-01T00:00:00Z')
const CLAIMED = { outcome: 'claimed' } as const
const IN_PROGRESS = { outcome: 'in_progress' } as const

/** A claim of `abc` by `k1` at NOW (token t1), kept a day and leased for a minute, unless told. */
const claimRequest = (over: Partial<IdempotencyClaimRequest> = {}): IdempotencyClaimRequest => ({
  apiKeyId: 'k1',
  key: 'abc',
  requestHash: 'h1',
  now: NOW,
  retentionMs: 24 * HOUR,
  leaseMs: 60_000,
  token: 't1',
  ...over,
})

const API_KEY: ApiKeyRecord = {
  id: 'aaaaaaaaaaaa',
  name: 'ci',
  secretHash: Buffer.alloc(32, 7),
  createdAt: new Date('2026-01-01T00:00:00Z'),
  expiresAt: new Date('2027-01-01T00:00:00Z'),
  revokedAt: null,
}

/** A pet made by a create of `k1` that completes its claim of `key` under `token`. */
const createCompleting = (store: Store, key: string, token: string, name = key) =>
  store.createPet({ name, categoryId: 1n }, { apiKeyId: 'k1', key, token })

export function storeContract(adapter: string, open: OpenStore): void {
  describe(`${adapter} store`, () => {
    test('creates pets with ascending ids and reads them back exactly', async (t) => {
      const store = await open(t)
      const a = await store.createPet({
        name: 'a',
        categoryId: 9223372036854775807n,
        status: 'sold',
      })
      const b = await store.createPet({ name: 'b', categoryId: -9223372036854775808n })
      assert.deepEqual(a, { id: 1n, name: 'a', categoryId: 9223372036854775807n, status: 'sold' })
      assert.deepEqual(b, { id: 2n, name: 'b', categoryId: -9223372036854775808n })
      assert.deepEqual(await store.getPet(1n), a)
      assert.deepEqual(await store.getPet(2n), b)
      assert.equal(await store.getPet(3n), null)
      assert.equal(await store.getPet(9223372036854775807n), null)
    })

    test('concurrent creates all commit, each with its own id', async (t) => {
      const store = await open(t)
      const pets = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          store.createPet({ name: `p${i}`, categoryId: BigInt(i) }),
        ),
      )
      const ids = pets.map((p) => p.id)
      assert.equal(new Set(ids).size, 200)
      const all = await store.listPets({ afterId: null, status: null, limit: 1000 })
      assert.deepEqual(
        all.map((p) => p.id),
        [...ids].sort((x, y) => (x < y ? -1 : 1)),
      )
    })

    test('insertPets adds a batch in order, with ascending ids, exact fields, all or nothing', async (t) => {
      const store = await open(t)
      const before = await store.createPet({ name: 'before', categoryId: 1n, status: 'sold' })
      await store.insertPets([
        { name: 'max', categoryId: 9223372036854775807n, status: 'available' },
        { name: 'min', categoryId: -9223372036854775808n },
        { name: 'beyond double', categoryId: 9007199254740993n, status: 'pending' },
        { name: 'Ünïcödé 🐕', categoryId: 0n },
      ])
      await store.insertPets([])
      // A batch that fails part-way leaves nothing behind.
      await assert.rejects(
        store.insertPets([
          { name: 'kept?', categoryId: 7n },
          { name: 'bad', categoryId: 8n, status: 'lost' as PetStatus },
        ]),
      )
      const after = await store.createPet({ name: 'after', categoryId: 2n })
      const inserted = [
        { id: 2n, name: 'max', categoryId: 9223372036854775807n, status: 'available' },
        { id: 3n, name: 'min', categoryId: -9223372036854775808n },
        { id: 4n, name: 'beyond double', categoryId: 9007199254740993n, status: 'pending' },
        { id: 5n, name: 'Ünïcödé 🐕', categoryId: 0n },
      ]
      assert.ok(after.id > 5n)
      assert.deepEqual(await store.listPets({ afterId: null, status: null, limit: 100 }), [
        before,
        ...inserted,
        after,
      ])
      assert.deepEqual(await store.getPet(3n), inserted[1])
      assert.deepEqual(await store.listPets({ afterId: null, status: 'pending', limit: 100 }), [
        inserted[2],
      ])
    })

    test('lists in id order with keyset paging and the status filter', async (t) => {
      const store = await open(t)
      const statuses = ['available', 'pending', undefined] as const
      for (let i = 0; i < 9; i++) {
        const status = statuses[i % 3]
        await store.createPet({
          name: `p${i}`,
          categoryId: BigInt(i),
          ...(status ? { status } : {}),
        })
      }
      const ids = async (query: PetPageQuery) => (await store.listPets(query)).map((p) => p.id)
      assert.deepEqual(await ids({ afterId: 2n, status: null, limit: 3 }), [3n, 4n, 5n])
      const pending = await store.listPets({ afterId: null, status: 'pending', limit: 10 })
      const seen = pending.map((p) => [p.id, p.status])
      assert.deepEqual(seen, [
        [2n, 'pending'],
        [5n, 'pending'],
        [8n, 'pending'],
      ])
      assert.deepEqual(await ids({ afterId: 5n, status: 'pending', limit: 10 }), [8n])
      assert.deepEqual(await store.listPets({ afterId: 9n, status: null, limit: 10 }), [])
    })

    test('idempotency claims: claimed, in progress, mismatch, completed', async (t) => {
      const store = await open(t)
      const req = claimRequest()
      assert.deepEqual(await store.claimIdempotencyKey(req), CLAIMED)
      assert.deepEqual(await store.claimIdempotencyKey(req), IN_PROGRESS)
      const otherRequest = { ...req, requestHash: 'h2' }
      assert.deepEqual(await store.claimIdempotencyKey(otherRequest), { outcome: 'mismatch' })
      // Scoped to the API key: another key may use the same Idempotency-Key.
      assert.deepEqual(await store.claimIdempotencyKey({ ...req, apiKeyId: 'k2' }), CLAIMED)
      const pet = await createCompleting(store, 'abc', 't1', 'x')
      const completed = { outcome: 'completed', petId: pet.id }
      assert.deepEqual(await store.claimIdempotencyKey(req), completed)
      // Within 24 hours it is replayed; after, the key is free again.
      const later = new Date(NOW.getTime() + 24 * HOUR - 1)
      assert.deepEqual(await store.claimIdempotencyKey({ ...req, now: later }), completed)
      const expired = new Date(NOW.getTime() + 24 * HOUR)
      const afterRetention = { ...req, now: expired, requestHash: 'h3' }
      assert.deepEqual(await store.claimIdempotencyKey(afterRetention), CLAIMED)
    })

    test('a claim whose lease ran out can be taken over; a released claim is free', async (t) => {
      const store = await open(t)
      const req = claimRequest()
      assert.deepEqual(await store.claimIdempotencyKey(req), CLAIMED)
      const afterLease = new Date(NOW.getTime() + 60_000)
      const takeOver = (token: string) =>
        store.claimIdempotencyKey({ ...req, now: afterLease, token })
      assert.deepEqual(await takeOver('t2'), CLAIMED)
      // The first claim's token no longer frees the key; the second's does.
      await store.releaseIdempotencyKey({ apiKeyId: 'k1', key: 'abc', token: 't1' })
      assert.deepEqual(await takeOver('t3'), IN_PROGRESS)
      await store.releaseIdempotencyKey({ apiKeyId: 'k1', key: 'abc', token: 't2' })
      assert.deepEqual(await store.claimIdempotencyKey({ ...req, requestHash: 'other' }), CLAIMED)
    })

    test('releasing never removes a completed record; purge removes old ones', async (t) => {
      const store = await open(t)
      const req = claimRequest({ key: 'done' })
      await store.claimIdempotencyKey(req)
      const pet = await createCompleting(store, 'done', 't1', 'x')
      await store.releaseIdempotencyKey({ apiKeyId: 'k1', key: 'done', token: 't1' })
      const completed = { outcome: 'completed', petId: pet.id }
      assert.deepEqual(await store.claimIdempotencyKey(req), completed)
      await store.claimIdempotencyKey({ ...req, key: 'newer', now: new Date(NOW.getTime() + HOUR) })
      assert.equal(await store.deleteIdempotencyKeysBefore(new Date(NOW.getTime() + 1)), 1)
      assert.equal(await store.deleteIdempotencyKeysBefore(new Date(NOW.getTime() + 1)), 0)
      assert.deepEqual(await store.claimIdempotencyKey({ ...req, requestHash: 'h9' }), CLAIMED)
    })

    test('a create whose claim was released or taken over adds nothing; the rest of its batch is stored', async (t) => {
      const store = await open(t)
      const claim = (key: string, token: string, now = NOW) =>
        store.claimIdempotencyKey(claimRequest({ key, token, now }))
      await claim('released', 'r1')
      await store.releaseIdempotencyKey({ apiKeyId: 'k1', key: 'released', token: 'r1' })
      await claim('taken-over', 'o1')
      assert.deepEqual(await claim('taken-over', 'o2', new Date(NOW.getTime() + 60_000)), CLAIMED)
      await claim('held', 'h1')
      // Submitted together: one batch, one transaction.
      const settled = await Promise.allSettled([
        store.createPet({ name: 'plain', categoryId: 1n }),
        createCompleting(store, 'released', 'r1'),
        createCompleting(store, 'taken-over', 'o1', 'stale'),
        createCompleting(store, 'held', 'h1'),
      ])
      assert.deepEqual(
        settled.map((s) => (s.status === 'fulfilled' ? s.value.name : (s.reason as Error).name)),
        ['plain', 'ClaimReleasedError', 'ClaimReleasedError', 'held'],
      )
      const names = (await store.listPets({ afterId: null, status: null, limit: 10 })).map(
        (p) => p.name,
      )
      assert.deepEqual(names, ['plain', 'held'])
      // The claim taken over is still the new holder's, in progress; the released key is free.
      const laterStill = new Date(NOW.getTime() + 60_001)
      assert.deepEqual(await claim('taken-over', 'o3', laterStill), IN_PROGRESS)
      assert.deepEqual(await claim('released', 'r2'), CLAIMED)
      const held = settled[3] as PromiseFulfilledResult<Pet>
      assert.deepEqual(await claim('held', 'h2'), { outcome: 'completed', petId: held.value.id })
    })

    test('idempotency records per API key are capped: the oldest completed go, none in progress', async (t) => {
      const store = await open(t, { idempotencyKeysPerApiKey: 3 })
      let second = 0
      const claim = (apiKeyId: string, key: string, requestHash = 'h1') => {
        const now = new Date(NOW.getTime() + 1000 * second++)
        const token = `${apiKeyId}/${key}`
        return store.claimIdempotencyKey(
          claimRequest({ apiKeyId, key, requestHash, now, leaseMs: HOUR, token }),
        )
      }
      const complete = (apiKeyId: string, key: string) =>
        store.createPet(
          { name: key, categoryId: 1n },
          { apiKeyId, key, token: `${apiKeyId}/${key}` },
        )

      assert.deepEqual(await claim('k2', 'other'), CLAIMED)
      const other = await complete('k2', 'other')
      assert.deepEqual(await claim('k1', 'a'), CLAIMED)
      await complete('k1', 'a')
      assert.deepEqual(await claim('k1', 'slow'), CLAIMED)
      assert.deepEqual(await claim('k1', 'c'), CLAIMED)
      const c = await complete('k1', 'c')
      // The fourth record of k1: its oldest completed one, `a`, goes; `slow` is in progress.
      assert.deepEqual(await claim('k1', 'd'), CLAIMED)
      const d = await complete('k1', 'd')
      assert.deepEqual(await claim('k1', 'slow'), IN_PROGRESS)
      assert.deepEqual(await claim('k1', 'c'), { outcome: 'completed', petId: c.id })
      assert.deepEqual(await claim('k1', 'd'), { outcome: 'completed', petId: d.id })
      // `a` is forgotten: another body is a new claim, not a mismatch. That claim pushes out `c`,
      // and the next one `d`, the last completed record.
      assert.deepEqual(await claim('k1', 'a', 'h2'), CLAIMED)
      assert.deepEqual(await claim('k1', 'c', 'h2'), CLAIMED)
      // Nothing completed is left to drop: every record in progress stays, even past the cap.
      assert.deepEqual(await claim('k1', 'e'), CLAIMED)
      assert.deepEqual(await claim('k1', 'slow'), IN_PROGRESS)
      assert.deepEqual(await claim('k1', 'a', 'h2'), IN_PROGRESS)
      assert.deepEqual(await claim('k1', 'c', 'h2'), IN_PROGRESS)
      assert.deepEqual(await claim('k1', 'e'), IN_PROGRESS)
      assert.deepEqual(await claim('k1', 'd', 'h2'), CLAIMED)
      // Another API key's records are its own.
      assert.deepEqual(await claim('k2', 'other'), { outcome: 'completed', petId: other.id })
    })

    test('API keys: insert, find, list, revoke once, count', async (t) => {
      const store = await open(t)
      assert.equal(await store.countApiKeys(), 0)
      const key = API_KEY
      const other: ApiKeyRecord = { ...key, id: 'bbbbbbbbbbbb', name: 'ops', expiresAt: null }
      await store.insertApiKey(key)
      await store.insertApiKey(other)
      assert.equal(await store.countApiKeys(), 2)
      assert.deepEqual(await store.findApiKey('aaaaaaaaaaaa'), key)
      assert.equal(await store.findApiKey('cccccccccccc'), null)
      assert.deepEqual(await store.listApiKeys(), [key, other])
      const at = new Date('2026-06-01T00:00:00Z')
      assert.equal(await store.revokeApiKey('aaaaaaaaaaaa', at), true)
      assert.equal(await store.revokeApiKey('aaaaaaaaaaaa', at), false)
      assert.equal(await store.revokeApiKey('cccccccccccc', at), false)
      assert.deepEqual(await store.findApiKey('aaaaaaaaaaaa'), { ...key, revokedAt: at })
    })

    test('dataVersion: pets moves with every change to pets, keys with every change to API keys; reads move neither', async (t) => {
      const store = await open(t)
      const version = async () => await store.dataVersion()
      const key = { ...API_KEY, expiresAt: null }
      const changes: [keyof DataVersion, () => Promise<unknown>][] = [
        ['pets', () => store.createPet({ name: 'a', categoryId: 1n })],
        ['pets', () => store.insertPets([{ name: 'b', categoryId: 2n }])],
        ['keys', () => store.insertApiKey(key)],
        ['keys', () => store.revokeApiKey(key.id, new Date('2026-02-01T00:00:00Z'))],
      ]
      let before = await version()
      const seen = { pets: [before.pets], keys: [before.keys] }
      for (const [part, change] of changes) {
        await change()
        const after = await version()
        seen[part].push(after[part])
        before = after
      }
      // Each change gave its part a number not seen before.
      assert.equal(new Set(seen.pets).size, 3, `pets ${seen.pets.join(', ')}`)
      assert.equal(new Set(seen.keys).size, 3, `keys ${seen.keys.join(', ')}`)
      // Reads leave both where they are, so that what was cached at them stays good.
      await store.listPets({ afterId: null, status: null, limit: 10 })
      await store.getPet(1n)
      await store.findApiKey(key.id)
      assert.deepEqual(await version(), before)
    })

    test('ping answers while open; close commits what was queued', async (t) => {
      const store = await open(t)
      await store.ping()
      const pending = store.createPet({ name: 'queued', categoryId: 5n })
      await store.close()
      assert.deepEqual(await pending, { id: 1n, name: 'queued', categoryId: 5n })
      await assert.rejects(store.createPet({ name: 'late', categoryId: 1n }))
    })
  })
}
