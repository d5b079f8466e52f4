import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { storeContract } from '../storage/store-contract.js'
import { freshPostgresUrl } from '../support/postgres.js'

storeContract('postgres', async (t, opts) => {
  const url = await freshPostgresUrl(t)
  const store = await openPostgresStore({ url, poolSize: 4, timeoutMs: 5000, ...opts })
  t.after(() => store.close())
  return store
})

test('postgres: instances starting together apply each migration exactly once', async (t) => {
  const url = await freshPostgresUrl(t)
  const stores = await Promise.all(
    Array.from({ length: 6 }, () => openPostgresStore({ url, poolSize: 1, timeoutMs: 5000 })),
  )
  t.after(() => Promise.all(stores.map((s) => s.close())))
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.after(() => client.end())
  const { rows } = await client.query('SELECT name FROM kysely_migration ORDER BY name')
  assert.deepEqual(
    rows.map((r) => r.name),
    ['001-initial'],
  )
})
