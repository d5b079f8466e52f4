import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test } from 'node:test'
import { Database, SQLITE_DRIVER } from '../../../src/storage/sqlite/driver.js'
import { openSqliteStore } from '../../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../../support/app.js'
import { forStore } from '../../support/stores.js'
import { storeContract } from '../store-contract.js'

const require = createRequire(import.meta.url)

forStore('sqlite', () => {
  storeContract('sqlite', async (t, opts) => {
    const store = await openSqliteStore(join(tempDir(t), 'store.db'), opts)
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
    assert.deepEqual(names, [
      '001-initial',
      '002-pets-status-check-as-comparisons',
      '003-idempotency-claim-token',
    ])
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

  test("sqlite: getPet and dataVersion see another process's commit at once", async (t) => {
    const path = join(tempDir(t), 'store.db')
    const store = await openSqliteStore(path)
    t.after(() => store.close())
    // Another process's connection, as `petstore seed` or a second worker would have.
    const other = new Database(path)
    t.after(() => other.close())
    await store.createPet({ name: 'first', categoryId: 1n })
    const before = (await store.dataVersion()).pets
    assert.equal(await store.getPet(2n), null)

    other
      .prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES (?, 2, 'sold', 0)")
      .run('second')
    assert.notEqual((await store.dataVersion()).pets, before)
    assert.deepEqual(await store.getPet(2n), {
      id: 2n,
      name: 'second',
      categoryId: 2n,
      status: 'sold',
    })
  })

  test('sqlite: a start that finds the file locked past busy_timeout tries again', async (t) => {
    // Another process holds a new (rollback-journal) file's write lock for 6 s: the switch to WAL
    // waits 5 s (busy_timeout), gets SQLITE_BUSY, and the next attempt gets the lock.
    const path = join(tempDir(t), 'store.db')
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require(${JSON.stringify(require.resolve(SQLITE_DRIVER))}))(${JSON.stringify(path)})
       db.exec('BEGIN EXCLUSIVE; CREATE TABLE held (x)')
       console.log('locked')
       setTimeout(() => { db.exec('COMMIT'); db.close() }, 6000)`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    t.after(() => holder.kill())
    await once(holder.stdout, 'data')
    const started = performance.now()
    const store = await openSqliteStore(path)
    t.after(() => store.close())
    assert.ok(performance.now() - started > 5000, 'it waited for the lock')
    assert.deepEqual(await store.createPet({ name: 'a', categoryId: 1n }), {
      id: 1n,
      name: 'a',
      categoryId: 1n,
    })
  })
})
