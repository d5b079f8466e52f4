import assert from 'node:assert/strict'
import { test } from 'node:test'
import type BetterSqlite3 from 'better-sqlite3'
import type { CreateItem } from '../../../src/storage/create-item.js'
import { Database } from '../../../src/storage/sqlite/driver.js'
import { migrateSqlite } from '../../../src/storage/sqlite/open-migrated.js'
import { createTransaction } from '../../../src/storage/sqlite/writes.js'
import { forStore } from '../../support/stores.js'

async function migrated(): Promise<BetterSqlite3.Database> {
  const db = new Database(':memory:')
  db.defaultSafeIntegers(true)
  await migrateSqlite(db)
  return db
}

forStore('sqlite', () => {
  test('migrating leaves foreign keys as the connection had them', async (t) => {
    const db = await migrated()
    t.after(() => db.close())
    assert.equal(db.pragma('foreign_keys', { simple: true }), 1n)
  })

  test('a batch of every size gets its ids in order, one per create, across the chunks', async (t) => {
    const db = await migrated()
    t.after(() => db.close())
    const commit = createTransaction(db)
    const rows = db.prepare(
      'SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id',
    )
    let last = 0n
    // 1 to 130: every combination of the chunk sizes up to two of the largest, and past them.
    for (let size = 1; size <= 130; size++) {
      const items: CreateItem[] = Array.from({ length: size }, (_, i) => ({
        pet: {
          name: `pet ${size}.${i}`,
          categoryId: BigInt(i),
          ...(i % 3 === 0
            ? {}
            : { status: i % 3 === 1 ? ('sold' as const) : ('pending' as const) }),
        },
        completes: undefined,
      }))
      const ids = commit(items)
      assert.deepEqual(
        ids,
        items.map((_, i) => last + 1n + BigInt(i)),
      )
      assert.deepEqual(
        rows.all(last),
        items.map(({ pet }, i) => ({
          id: ids[i],
          name: pet.name,
          category_id: pet.categoryId,
          status: pet.status ?? null,
        })),
      )
      last = ids.at(-1)!
    }
  })

  test('each idempotency claim a batch completes points at its own pet', async (t) => {
    const db = await migrated()
    t.after(() => db.close())
    const claim = db.prepare(
      "INSERT INTO idempotency_keys VALUES ('key-1', ?, 'hash', NULL, 0, 100, 'token-' || ?)",
    )
    const items: CreateItem[] = Array.from({ length: 7 }, (_, i) => ({
      pet: { name: `pet ${i}`, categoryId: 1n },
      completes:
        i % 2 === 0 ? { apiKeyId: 'key-1', key: `idem-${i}`, token: `token-idem-${i}` } : undefined,
    }))
    for (const item of items) if (item.completes) claim.run(item.completes.key, item.completes.key)
    const ids = createTransaction(db)(items)
    assert.deepEqual(
      db
        .prepare(
          'SELECT idempotency_key, pet_id, locked_until FROM idempotency_keys ORDER BY idempotency_key',
        )
        .all(),
      [0, 2, 4, 6].map((i) => ({
        idempotency_key: `idem-${i}`,
        pet_id: ids[i],
        locked_until: null,
      })),
    )
  })

  test('a batch with a row SQLite refuses leaves nothing of the batch', async (t) => {
    const db = await migrated()
    t.after(() => db.close())
    const commit = createTransaction(db)
    commit([{ pet: { name: 'before', categoryId: 1n }, completes: undefined }])
    const items: CreateItem[] = Array.from({ length: 20 }, (_, i) => ({
      pet: { name: `pet ${i}`, categoryId: 1n, status: (i === 17 ? 'lost' : 'sold') as 'sold' },
      completes: undefined,
    }))
    assert.throws(() => commit(items), { code: 'SQLITE_CONSTRAINT_CHECK' })
    assert.deepEqual(db.prepare('SELECT id, name FROM pets').all(), [{ id: 1n, name: 'before' }])
    assert.deepEqual(commit([{ pet: { name: 'after', categoryId: 1n }, completes: undefined }]), [
      2n,
    ])
  })
})
