import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../support/app.js'
import { storeContract } from './store-contract.js'

storeContract('sqlite', async (t) => {
  const store = await openSqliteStore(join(tempDir(t), 'store.db'))
  t.after(() => store.close())
  return store
})

test('sqlite: the file is in WAL mode and survives a reopen', async (t) => {
  const path = join(tempDir(t), 'nested', 'dir', 'store.db')
  const store = await openSqliteStore(path)
  await store.createPet({ name: 'kept', categoryId: 1n, status: 'pending' })
  await store.close()
  const db = new Database(path, { readonly: true })
  t.after(() => db.close())
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  const reopened = await openSqliteStore(path)
  t.after(() => reopened.close())
  assert.deepEqual(await reopened.getPet(1n), {
    id: 1n,
    name: 'kept',
    categoryId: 1n,
    status: 'pending',
  })
})

test('sqlite: migrating an up-to-date database changes nothing', async (t) => {
  const path = join(tempDir(t), 'store.db')
  await (await openSqliteStore(path)).close()
  await (await openSqliteStore(path)).close()
  const db = new Database(path, { readonly: true })
  t.after(() => db.close())
  const names = db.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all()
  assert.deepEqual(names, ['001-initial'])
})

test('sqlite: an in-memory store is migrated on its own connection', async (t) => {
  const store = await openSqliteStore(':memory:')
  t.after(() => store.close())
  assert.deepEqual(await store.createPet({ name: 'm', categoryId: 1n }), {
    id: 1n,
    name: 'm',
    categoryId: 1n,
  })
})
