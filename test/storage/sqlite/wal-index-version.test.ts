// The data version read from SQLite's WAL index moves with every commit, whoever makes it, and
// only then; a database without a WAL index gives none (the store then asks the pragma).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { openDatabase } from '../../../src/storage/sqlite/connection.js'
import { Database } from '../../../src/storage/sqlite/driver.js'
import { WalIndexVersion } from '../../../src/storage/sqlite/wal-index-version.js'
import { tempDir } from '../../support/app.js'
import { forStore } from '../../support/stores.js'

forStore('sqlite', () => {
  test('every commit by this or another connection moves the version; reads and checkpoints do not', (t) => {
    const path = join(tempDir(t), 'w.db')
    const db = openDatabase(path, { create: true })
    t.after(() => db.close())
    db.exec('CREATE TABLE t (x INTEGER)')
    const wal = WalIndexVersion.open(path)
    assert.ok(wal !== null)
    t.after(() => wal.close())
    const other = new Database(path)
    t.after(() => other.close())

    let v = wal.current()
    assert.equal(wal.current(), v)
    db.prepare('SELECT count(*) FROM t').get()
    other.prepare('SELECT count(*) FROM t').get()
    assert.equal(wal.current(), v, 'reads leave it')

    const insertHere = db.prepare('INSERT INTO t VALUES (1)')
    const insertThere = other.prepare('INSERT INTO t VALUES (2)')
    for (let i = 0; i < 200; i++) {
      ;(i % 2 === 0 ? insertHere : insertThere).run()
      const next = wal.current()
      assert.notEqual(next, v, `commit ${i} moved it`)
      v = next
    }

    // A checkpoint copies pages into the database file without changing what a reader sees.
    other.pragma('wal_checkpoint(TRUNCATE)')
    const afterCheckpoint = wal.current()
    // The next commit starts the log afresh (new salts); that moves it too.
    insertThere.run()
    assert.notEqual(wal.current(), afterCheckpoint)
  })

  test('a database that is not in WAL mode has no WAL index to read', (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'rollback.db')
    const db = new Database(path)
    t.after(() => db.close())
    db.exec('CREATE TABLE t (x INTEGER)')
    assert.equal(WalIndexVersion.open(path), null)
  })
})
