// `petstore migrate` as an operator runs it, on this run's store: it names each migration it
// applies, and says so when there was none to apply.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { postgresMigrations } from '../../src/storage/postgres/migrations.js'
import { SQLITE_MIGRATION_NAMES } from '../../src/storage/sqlite/migration-names.js'
import { freshPostgresUrl, TEST_STORE } from '../support/postgres.js'
import { workspace } from '../support/workspace.js'

/** An empty database of this run's store, and every migration the service has for it. */
async function emptyDatabase(t: TestContext, dir: string) {
  if (TEST_STORE === 'postgres') {
    return { url: await freshPostgresUrl(t), names: Object.keys(postgresMigrations) }
  }
  return { url: `sqlite:${join(dir, 'data', 'petstore.db')}`, names: [...SQLITE_MIGRATION_NAMES] }
}

test('migrate names each migration it applies; run again, it says there was none to apply', async (t) => {
  const w = workspace(t)
  const { url, names } = await emptyDatabase(t, w.dir)
  const env = { PETSTORE_DATABASE_URL: url }
  assert.ok(names.length >= 3, names.join(', '))
  const upToDate = `database is up to date (${TEST_STORE}: ${url})\n`

  const first = await w.run(['migrate'], env)
  assert.deepEqual(first, {
    code: 0,
    signal: null,
    stdout: `${names.map((name) => `applied migration ${name}\n`).join('')}${upToDate}`,
    stderr: '',
  })
  const again = await w.run(['migrate'], env)
  assert.deepEqual(again, {
    code: 0,
    signal: null,
    stdout: `no migration to apply: ${upToDate}`,
    stderr: '',
  })
  // The schema it made is the one the other commands use.
  const list = await w.run(['keys', 'list', '--json'], env)
  assert.deepEqual(list, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
})
