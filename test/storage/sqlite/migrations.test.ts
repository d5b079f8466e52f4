import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import type BetterSqlite3 from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect } from 'kysely'
import { Database } from '../../../src/storage/sqlite/driver.js'
import { SQLITE_MIGRATION_NAMES } from '../../../src/storage/sqlite/migration-names.js'
import { sqliteMigrations } from '../../../src/storage/sqlite/migrations.js'
import { openSqliteStore } from '../../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../../support/app.js'
import { forStore } from '../../support/stores.js'

/** A database file as a version that knew only 001 left it, migrated by Kysely's own migrator. */
async function databaseAt001(path: string): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(path) }) })
  try {
    const migrator = new Migrator({
      db,
      provider: {
        getMigrations: async () => ({ '001-initial': sqliteMigrations['001-initial']! }),
      },
    })
    const { error } = await migrator.migrateToLatest()
    if (error) throw error
  } finally {
    await db.destroy()
  }
}

const PETS_SQL = "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'pets'"

forStore('sqlite', () => {
  test('migration-names.ts lists the keys of migrations.ts, in order', () => {
    assert.deepEqual(Object.keys(sqliteMigrations), SQLITE_MIGRATION_NAMES)
  })

  test('sqlite migration 002: pets rebuilt with the same rows, counter, index and keys', async (t) => {
    const path = join(tempDir(t), 'store.db')
    await databaseAt001(path)
    const old = new Database(path)
    old.defaultSafeIntegers(true)
    assert.match(old.prepare(PETS_SQL).pluck().get() as string, /status IN \('available'/)
    const insert = old.prepare(
      'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)',
    )
    insert.run('a', 1n, 'available', 10)
    insert.run('b "quoted" ✓', 9223372036854775807n, null, 11)
    insert.run('c', 3n, 'sold', 12)
    insert.run('gone', 4n, 'pending', 13)
    // The highest id deleted: the counter stays past the highest id left, and must carry over.
    old.prepare('DELETE FROM pets WHERE id = 4').run()
    old
      .prepare(
        "INSERT INTO idempotency_keys VALUES ('k1', 'idem-1', 'hash', 2, 20, NULL), ('k1', 'idem-2', 'hash', NULL, 21, 99)",
      )
      .run()
    const petsBefore = old.prepare('SELECT * FROM pets ORDER BY id').raw(true).all()
    const keysBefore = old.prepare('SELECT * FROM idempotency_keys ORDER BY idempotency_key').all()
    old.close()

    const store = await openSqliteStore(path)
    t.after(() => store.close())
    assert.deepEqual(await store.createPet({ name: 'next', categoryId: 5n }), {
      id: 5n,
      name: 'next',
      categoryId: 5n,
    })

    const db = new Database(path)
    t.after(() => db.close())
    db.defaultSafeIntegers(true)
    assert.deepEqual(db.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all(), [
      '001-initial',
      '002-pets-status-check-as-comparisons',
      '003-idempotency-claim-token',
    ])
    assert.equal(
      db.prepare(PETS_SQL).pluck().get(),
      `CREATE TABLE "pets" (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status = 'available' OR status = 'pending' OR status = 'sold'),
        created_at INTEGER NOT NULL
      )`,
    )
    assert.deepEqual(
      db.prepare('SELECT * FROM pets WHERE id < 5 ORDER BY id').raw(true).all(),
      petsBefore,
    )
    // The same records, with migration 003's claim_token (none for claims made before it).
    assert.deepEqual(
      db.prepare('SELECT * FROM idempotency_keys ORDER BY idempotency_key').all(),
      keysBefore.map((row) => ({ ...(row as object), claim_token: null })),
    )
    assert.deepEqual(db.prepare('SELECT name, seq FROM sqlite_sequence').all(), [
      { name: 'pets', seq: 5n },
    ])
    assert.deepEqual(
      db
        .prepare(
          "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
        )
        .all(),
      [
        { name: 'idempotency_keys_created_at', tbl_name: 'idempotency_keys' },
        { name: 'pets_status_id', tbl_name: 'pets' },
      ],
    )
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
    assert.deepEqual(db.pragma('foreign_key_check'), [])
    // The same rule as before: a status outside the three, or of another type, is refused.
    for (const status of ['lost', 'Sold', '', 1]) {
      assert.throws(
        () => insert2(db).run('x', 1n, status, 0),
        { code: 'SQLITE_CONSTRAINT_CHECK' },
        String(status),
      )
    }
  })

  const insert2 = (db: BetterSqlite3.Database) =>
    db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)')

  test('sqlite migration 002: a broken foreign key already there stops it and changes nothing', async (t) => {
    const path = join(tempDir(t), 'store.db')
    await databaseAt001(path)
    const old = new Database(path)
    // Written with foreign keys off, as only a hand edit could.
    old.pragma('foreign_keys = OFF')
    old.prepare("INSERT INTO idempotency_keys VALUES ('k1', 'idem', 'hash', 42, 20, NULL)").run()
    const schemaBefore = old
      .prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name')
      .all()
    old.close()

    await assert.rejects(openSqliteStore(path), {
      message: 'rebuilding pets would leave 1 broken foreign keys',
    })
    const db = new Database(path, { readonly: true })
    t.after(() => db.close())
    assert.deepEqual(
      db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all(),
      schemaBefore,
    )
    assert.deepEqual(db.prepare('SELECT name FROM kysely_migration').pluck().all(), ['001-initial'])
  })
})
