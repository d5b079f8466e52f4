// The first start's key: printed on a terminal; otherwise written to a new file that only the
// service's user can read, with only its path in the output (a log that others collect and keep).
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { ApiKeyVerifier } from '../src/auth/api-keys.js'
import { manualClock } from '../src/clock.js'
import { configWith } from '../src/config.js'
import { bootstrapKeyPath, ensureBootstrapKey } from '../src/server.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../src/storage/store.js'
import { storeIndependent } from './support/stores.js'
import { tempDir } from './support/workspace.js'

const KEY = /pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/g

/** A stream that records what is written, a terminal or not. */
function output(isTTY: boolean) {
  let text = ''
  const stream = {
    isTTY,
    write: (chunk: string) => {
      text += chunk
      return true
    },
  }
  return { stream: stream as unknown as NodeJS.WritableStream, text: () => text }
}

async function fresh(t: TestContext) {
  const dir = tempDir(t)
  const dbPath = join(dir, 'petstore.db')
  const store = await openSqliteStore(dbPath)
  t.after(() => store.close())
  const config = configWith({ databaseUrl: `sqlite:${dbPath}` })
  return { dir, store, config, clock: manualClock(new Date('2026-01-15T12:00:00Z')) }
}

async function accepted(store: Store, key: string): Promise<boolean> {
  const verifier = new ApiKeyVerifier(store, manualClock(new Date('2026-01-15T12:00:01Z')), [])
  return (await verifier.verify(key)) !== null
}

storeIndependent(() => {
  test('not a terminal: the key goes to a new 0600 file beside the database; only the path is printed', async (t) => {
    const { dir, store, config, clock } = await fresh(t)
    const out = output(false)
    await ensureBootstrapKey(config, store, clock, out.stream)

    const path = join(dir, 'bootstrap-key')
    assert.equal(bootstrapKeyPath(config), path)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    const written = readFileSync(path, 'utf8')
    const key = written.trimEnd()
    assert.equal(written, `${key}\n`)
    assert.match(key, /^pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/)
    assert.equal(
      out.text(),
      `petstore: no API key existed, so one was created (id ${key.slice(4, 16)}); the bootstrap API key was written to ${path}, readable only by this user\n`,
    )
    assert.equal(out.text().match(KEY), null)
    assert.equal(await accepted(store, key), true)
    assert.deepEqual(
      (await store.listApiKeys()).map((k) => [k.id, k.name]),
      [[key.slice(4, 16), 'bootstrap']],
    )

    // A key exists now: the next start makes none and writes nothing.
    const again = output(false)
    await ensureBootstrapKey(config, store, clock, again.stream)
    assert.equal(again.text(), '')
    assert.equal(readFileSync(path, 'utf8'), written)
  })

  test('on a terminal the key is printed once, as before, and no file is written', async (t) => {
    const { dir, store, config, clock } = await fresh(t)
    const out = output(true)
    await ensureBootstrapKey(config, store, clock, out.stream)
    const keys = out.text().match(KEY) ?? []
    assert.equal(keys.length, 1, out.text())
    assert.ok(out.text().includes(' No API key existed, so one was created. It is shown only now:'))
    assert.equal(existsSync(join(dir, 'bootstrap-key')), false)
    assert.equal(await accepted(store, keys[0]!), true)
  })

  test('an existing file is never overwritten: the start stops and no key is stored', async (t) => {
    const { dir, store, config, clock } = await fresh(t)
    const path = join(dir, 'bootstrap-key')
    writeFileSync(path, 'an earlier database key\n')
    const out = output(false)
    await assert.rejects(ensureBootstrapKey(config, store, clock, out.stream), {
      message: `${path} already exists: a bootstrap key is only written to a new file; remove it (its key belongs to an earlier database) or set PETSTORE_BOOTSTRAP_KEY_FILE`,
    })
    assert.equal(readFileSync(path, 'utf8'), 'an earlier database key\n')
    assert.equal(await store.countApiKeys(), 0)
    assert.equal(out.text(), '')
  })

  test('PETSTORE_BOOTSTRAP_KEY_FILE names the file; on PostgreSQL the default is the working directory', async (t) => {
    const { dir, store, config, clock } = await fresh(t)
    const path = join(dir, 'secrets', 'petstore-key')
    const out = output(false)
    // A missing folder is not created: the operator chose the place and its permissions.
    await assert.rejects(
      ensureBootstrapKey({ ...config, bootstrapKeyFile: path }, store, clock, out.stream),
      {
        name: 'ConfigError',
        message: `invalid configuration:\n  PETSTORE_BOOTSTRAP_KEY_FILE=${JSON.stringify(path)} cannot be used: cannot create ${path} (ENOENT: its folder does not exist)`,
      },
    )
    assert.equal(await store.countApiKeys(), 0)
    const direct = join(dir, 'petstore-key')
    await ensureBootstrapKey({ ...config, bootstrapKeyFile: direct }, store, clock, out.stream)
    assert.equal(statSync(direct).mode & 0o777, 0o600)
    assert.equal(await accepted(store, readFileSync(direct, 'utf8').trimEnd()), true)
    assert.ok(out.text().includes(`written to ${direct},`))

    const postgres = configWith({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' })
    assert.equal(bootstrapKeyPath(postgres), join(process.cwd(), 'bootstrap-key'))
  })

  test('with configured keys no bootstrap key is made', async (t) => {
    const { dir, store, config, clock } = await fresh(t)
    const out = output(false)
    await ensureBootstrapKey(
      { ...config, apiKeys: ['configured-key-0123456789'] },
      store,
      clock,
      out.stream,
    )
    assert.equal(out.text(), '')
    assert.equal(existsSync(join(dir, 'bootstrap-key')), false)
    assert.equal(await store.countApiKeys(), 0)
  })
})
