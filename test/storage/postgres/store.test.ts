import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { openPostgresStore } from '../../../src/storage/postgres/postgres-store.js'
import { freshPostgresUrl } from '../../support/postgres.js'
import { forStore } from '../../support/stores.js'
import { storeContract } from '../store-contract.js'
import { MIGRATIONS } from './expected.js'

forStore('postgres', () => {
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
    const names = rows.map((r) => r.name)
    assert.deepEqual(names, MIGRATIONS)
  })

  test('postgres: a dataVersion asked for after a commit elsewhere is at least that commit', async (t) => {
    const url = await freshPostgresUrl(t)
    const store = await openPostgresStore({ url, poolSize: 4, timeoutMs: 5000 })
    t.after(() => store.close())
    const other = new pg.Client({ connectionString: url })
    await other.connect()
    t.after(() => other.end())
    // Reads kept in flight all along: a caller arriving during one must wait for the next read,
    // never share the one already sent (which may predate the commit).
    let reading = true
    const readers = Array.from({ length: 3 }, async () => {
      while (reading) await store.dataVersion()
    })
    try {
      for (let i = 0; i < 50; i++) {
        await other.query(
          "INSERT INTO pets (name, category_id, created_at) VALUES ('elsewhere', 1, 0)",
        )
        const { rows } = await other.query<{ pets: string }>('SELECT pets::text FROM data_version')
        const committed = Number(rows[0]!.pets)
        const seen = (await store.dataVersion()).pets
        assert.ok(seen >= committed, `read ${seen} after commit ${committed}`)
      }
    } finally {
      reading = false
      await Promise.all(readers)
    }
  })

  test('postgres: a create moves the pets part of dataVersion and leaves the keys part', async (t) => {
    const url = await freshPostgresUrl(t)
    const store = await openPostgresStore({ url, poolSize: 2, timeoutMs: 5000 })
    t.after(() => store.close())
    const before = await store.dataVersion()
    await store.createPet({ name: 'a', categoryId: 1n })
    const after = await store.dataVersion()
    assert.equal(after.keys, before.keys)
    assert.notEqual(after.pets, before.pets)
  })
})
