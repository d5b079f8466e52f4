// `petstore backup FILE` as an operator runs it: a process of its own beside `petstore serve` on
// the same SQLite file, while clients create pets; then each copy checked on its own and served.
import assert from 'node:assert/strict'
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { Database } from '../../../src/storage/sqlite/driver.js'
import { call, listAllPets } from '../../support/api.js'
import { spawnService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'
import { type RunResult, workspace } from '../../support/workspace.js'

const KEY = 'backup-test-key-0123456789'
const SEEDED = 10_000
/** Pets enough (about 55 MB) that a backup is still copying when the test sees its copy begin. */
const SEEDED_LARGE = 1_000_000
const CLIENTS = 8
const BACKUPS = 4
const SUMMARY =
  /^backed up (\S+) to (\S+): (\d+) pets, 0 API keys, (\d+) bytes \((\d+) pages of 4096\); integrity check ok\n$/

interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}

const harness = (t: TestContext) =>
  workspace(t, { PETSTORE_API_KEYS: KEY, PETSTORE_RATE_LIMIT_MAX: '100000000' })

/** Request `i` of client `c`: a name no other request uses, and every status in turn. */
function newPet(c: number, i: number): Omit<Pet, 'id'> {
  const statuses = [undefined, 'available', 'pending', 'sold'] as const
  const status = statuses[(c + i) % 4]
  return { name: `client-${c}-pet-${i}`, categoryId: c * 100_000 + i, ...(status && { status }) }
}

/** What SQLite says of a file, opened read-only as a restore would find it. */
function inspect(path: string): { journalMode: unknown; integrity: unknown; pets: number } {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return {
      journalMode: db.pragma('journal_mode', { simple: true }),
      integrity: db.pragma('integrity_check'),
      pets: Number(db.prepare('SELECT count(*) FROM pets').pluck().get()),
    }
  } finally {
    db.close()
  }
}

function assertRefused(res: RunResult, stderr: string): void {
  assert.deepEqual(res, { code: 2, signal: null, stdout: '', stderr: `petstore: ${stderr}\n` })
}

forStore('sqlite', () => {
  describe('petstore backup', { concurrency: true }, () => {
    test('copies taken while clients create pets hold every pet acknowledged before they began', {
      timeout: 240_000,
    }, async (t) => {
      const w = harness(t)
      // Pages enough that a copy taken in small steps would be restarted by the creates between them.
      assert.equal((await w.run(['seed', '--count', String(SEEDED), '--status', 'sold'])).code, 0)
      const server = await w.start()

      const attempted = new Map<string, Omit<Pet, 'id'>>()
      const acknowledged = new Map<number, Pet>()
      const unexpected: string[] = []
      let stopped = false
      const client = async (c: number) => {
        for (let i = 0; !stopped; i++) {
          const pet = newPet(c, i)
          attempted.set(pet.name, pet)
          const body = JSON.stringify(pet)
          const reply = await call(server.port, {
            method: 'POST',
            path: '/v1/pets',
            key: KEY,
            body,
          })
          const id = Number(/^\{"id":([1-9][0-9]*),/.exec(reply.body)?.[1])
          if (reply.status !== 201 || reply.body !== JSON.stringify({ id, ...pet })) {
            unexpected.push(`${reply.status} ${reply.body} for ${body}`)
            return
          }
          acknowledged.set(id, { id, ...pet })
        }
      }
      const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))

      const backups: { file: string; before: Pet[]; during: number; res: RunResult }[] = []
      for (let b = 0; b < BACKUPS && unexpected.length === 0; b++) {
        // Creates committed since the previous backup, so each copy is taken mid-stream.
        const floor = acknowledged.size + 100
        while (acknowledged.size < floor && unexpected.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        const file = `backup-${b}.db`
        const before = [...acknowledged.values()]
        const res = await w.run(['backup', file])
        backups.push({ file, before, during: acknowledged.size - before.length, res })
      }
      stopped = true
      await load
      assert.deepEqual(unexpected, [])
      await server.stop()

      for (const { file, before, during, res } of backups) {
        const path = join(w.dir, file)
        t.diagnostic(`${file}: ${before.length} acknowledged before, ${during} while it ran`)
        assert.ok(during > 0, 'the service took creates while the backup ran')
        assert.equal(res.code, 0, res.stderr)
        assert.equal(res.stderr, '')
        const m = SUMMARY.exec(res.stdout)
        assert.ok(m, res.stdout)
        const [, source, named, pets, bytes, pages] = m
        assert.deepEqual([source, named], [w.dbPath, file])
        assert.equal(Number(bytes), statSync(path).size)
        assert.equal(Number(bytes), Number(pages) * 4096)
        // One file, whole by itself: no -wal or -shm beside it, before or after SQLite opens it.
        const sideFiles = () => readdirSync(w.dir).filter((f) => f.startsWith(`${file}`))
        assert.deepEqual(sideFiles(), [file])
        assert.deepEqual(inspect(path), {
          journalMode: 'delete',
          integrity: [{ integrity_check: 'ok' }],
          pets: Number(pets),
        })
        assert.deepEqual(sideFiles(), [file])
        assert.ok(Number(pets) >= SEEDED + before.length, `${pets} pets, ${before.length} before`)

        // A service started on the copy serves every pet answered 201 before the backup began.
        const copy = await w.start([], { PETSTORE_DATABASE_URL: `sqlite:${path}` })
        const listed = await listAllPets<Pet>(copy, KEY)
        await copy.stop()
        assert.equal(listed.length, Number(pets))
        const byId = new Map(listed.map((p) => [p.id, p]))
        for (const pet of before) assert.deepEqual(byId.get(pet.id), pet, `pet ${pet.id}`)
        // And nothing but the seeded pets and pets that were asked for, each as it was asked for.
        const seeded = listed.slice(0, SEEDED)
        assert.deepEqual(
          seeded.map((p) => p.name),
          Array.from({ length: SEEDED }, (_, i) => `pet-${i + 1}`),
        )
        for (const pet of listed.slice(SEEDED)) {
          assert.deepEqual(pet, { id: pet.id, ...attempted.get(pet.name) }, `pet ${pet.name}`)
        }
      }
      // The last copy is as new as the load allowed: far more than the first.
      assert.ok(backups.at(-1)!.before.length > backups[0]!.before.length)
    })

    test('refuses, with exit code 2, a FILE it must not write', async (t) => {
      const w = harness(t)
      assert.equal((await w.run(['migrate'])).code, 0)
      writeFileSync(join(w.dir, 'taken.db'), 'an older backup')
      mkdirSync(join(w.dir, 'folder'))
      writeFileSync(join(w.dir, 'open.db'), 'a database a service has open')
      writeFileSync(join(w.dir, 'open.db-wal'), 'its log')
      const results = await Promise.all(
        [
          ['taken.db'],
          ['taken.db', '--force'],
          ['missing/copy.db'],
          ['folder', '--force'],
          ['petstore.db', '--force'],
          [join(w.dir, 'petstore.db-wal'), '--force'],
          ['open.db', '--force'],
        ].map((args) => w.run(['backup', ...args])),
      )
      const [taken, forced, missing, folder, itself, wal, open] = results
      assertRefused(
        taken!,
        'taken.db already exists; choose another name, or pass --force to replace it',
      )
      assert.equal(forced!.code, 0, forced!.stderr)
      assert.match(forced!.stdout, /^backed up \S+ to taken\.db: 0 pets, 0 API keys, \d+ bytes/)
      assert.deepEqual(inspect(join(w.dir, 'taken.db')).integrity, [{ integrity_check: 'ok' }])
      assertRefused(
        missing!,
        `cannot write missing/copy.db: no directory ${join(w.dir, 'missing')}`,
      )
      assertRefused(folder!, 'folder is a directory')
      assertRefused(itself!, 'petstore.db is the database being backed up, or one of its files')
      assertRefused(
        wal!,
        `${join(w.dir, 'petstore.db-wal')} is the database being backed up, or one of its files`,
      )
      assertRefused(
        open!,
        'open.db-wal exists: a service may have open.db open; stop it, or remove open.db-wal if none has',
      )
      // Nothing else was written, not even a partial copy; the refused files are as they were.
      assert.deepEqual(readdirSync(w.dir).sort(), [
        'folder',
        'open.db',
        'open.db-wal',
        'petstore.db',
        'taken.db',
      ])
      assert.equal(readFileSync(join(w.dir, 'open.db'), 'utf8'), 'a database a service has open')
    })

    test('refuses a store it cannot copy: PostgreSQL (naming pg_dump), memory, no file, not a store', async (t) => {
      const w = harness(t)
      const run = (url: string) => w.run(['backup', 'copy.dump'], { PETSTORE_DATABASE_URL: url })
      writeFileSync(join(w.dir, 'notes.txt'), 'not a database at all, just a text file long enough')
      const other = new Database(join(w.dir, 'other.db'))
      other.exec('CREATE TABLE t (x)')
      other.close()
      const [pg, pgql, memory, absent, text, foreign] = await Promise.all([
        run('postgres://petstore:s3cret@db.example:5433/pets?sslmode=require'),
        run('postgresql://backup@127.0.0.1/petstore'),
        run('sqlite::memory:'),
        run(`sqlite:${join(w.dir, 'data', 'petstore.db')}`),
        run(`sqlite:${join(w.dir, 'notes.txt')}`),
        run(`sqlite:${join(w.dir, 'other.db')}`),
      ])
      const advice =
        'backup copies the embedded SQLite store; PETSTORE_DATABASE_URL names a PostgreSQL database.\n' +
        'Use pg_dump instead, as docs/operations.md ("Backup and restore") describes:\n'
      assertRefused(
        pg!,
        `${advice}  pg_dump --format=custom --file=copy.dump --dbname='postgres://petstore@db.example:5433/pets?sslmode=require'\n` +
          '(the password is left out: pg_dump asks for it, or reads PGPASSWORD or ~/.pgpass)',
      )
      assertRefused(
        pgql!,
        `${advice}  pg_dump --format=custom --file=copy.dump --dbname=postgresql://backup@127.0.0.1/petstore`,
      )
      assertRefused(
        memory!,
        'the store is in memory (PETSTORE_DATABASE_URL=sqlite::memory:): no file to back up',
      )
      const absentPath = join(w.dir, 'data', 'petstore.db')
      assertRefused(
        absent!,
        `no database at ${absentPath} (PETSTORE_DATABASE_URL=sqlite:${absentPath}): nothing to back up`,
      )
      assertRefused(text!, `${join(w.dir, 'notes.txt')} is not a SQLite database`)
      assertRefused(
        foreign!,
        `${join(w.dir, 'other.db')} is not a pet store database (it has no pets table)`,
      )
      assert.deepEqual(readdirSync(w.dir).sort(), ['notes.txt', 'other.db'])
    })

    test('killed midway (SIGKILL), it leaves one entry, FILE.partial-<pid>; the next backup removes it and succeeds', {
      timeout: 240_000,
    }, async (t) => {
      const w = harness(t)
      const seeded = await w.run(['seed', '--count', String(SEEDED_LARGE)], {}, 180_000)
      assert.equal(seeded.code, 0, seeded.stderr)
      const backup = spawnService(t, { cwd: w.dir, args: ['backup', 'copy.db'] })
      const leftover = `copy.db.partial-${backup.pid}`
      const copy = join(w.dir, leftover, 'copy.db')
      await until(
        'the backup writes pages into its copy',
        () => (statSync(copy, { throwIfNoEntry: false })?.size ?? 0) > 0,
        60_000,
      )
      backup.child.kill('SIGKILL')
      assert.deepEqual(await backup.exited, { code: null, signal: 'SIGKILL' })
      // The store's own -wal and -shm may stay too: the killed process had the store open.
      const backupFiles = () => readdirSync(w.dir).filter((name) => !name.startsWith('petstore.db'))
      assert.deepEqual(backupFiles(), [leftover], 'no copy.db, and nothing but the one directory')
      assert.ok(statSync(join(w.dir, leftover)).isDirectory())

      const next = await w.run(['backup', 'copy.db'])
      assert.equal(next.code, 0, next.stderr)
      assert.equal(next.stderr, `removed ${leftover}, left by a backup that did not finish\n`)
      const summary = SUMMARY.exec(next.stdout)
      assert.ok(summary, next.stdout)
      assert.equal(Number(summary[3]), SEEDED_LARGE)
      assert.deepEqual(backupFiles(), ['copy.db'])
      assert.deepEqual(inspect(join(w.dir, 'copy.db')), {
        journalMode: 'delete',
        integrity: [{ integrity_check: 'ok' }],
        pets: SEEDED_LARGE,
      })
    })

    test('a copy that fails its integrity check exits 1 and leaves no file behind', async (t) => {
      const w = harness(t)
      assert.equal((await w.run(['seed', '--count', '20000'])).code, 0)
      assert.equal(existsSync(`${w.dbPath}-wal`), false, 'the seed checkpointed on close')
      // A page of the pets table overwritten: SQLite copies it as it is, and the check finds it.
      const fd = openSync(w.dbPath, 'r+')
      writeSync(fd, Buffer.alloc(4096, 0xff), 0, 4096, 100 * 4096)
      closeSync(fd)
      const res = await w.run(['backup', 'copy.db'])
      assert.equal(res.code, 1, res.stderr)
      assert.equal(res.stdout, '')
      assert.match(
        res.stderr,
        /^petstore: backup failed: the copy failed PRAGMA integrity_check: [^\n]+; the store itself may be damaged\n$/,
      )
      assert.deepEqual(readdirSync(w.dir), ['petstore.db'])
    })
  })
})
