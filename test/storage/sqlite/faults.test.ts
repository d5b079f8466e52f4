// Faults of the disk and of the SQLite file under a running service (`node dist/main.js serve`,
// as deployed): a file system filled to the brim, one the kernel turns read-only, a write lock
// held past the busy timeout, the file deleted, the file replaced. Each is 503 with Retry-After
// and the Error body, never 500, readiness 503 while it lasts, and no pet acknowledged with 201 is
// missing from the file afterwards.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  copyFileSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { StorageUnavailableError } from '../../../src/storage/errors.js'
import { Database } from '../../../src/storage/sqlite/driver.js'
import { FILE_REPLACED, unavailableIfDiskFault } from '../../../src/storage/sqlite/faults.js'
import { call, type Pet, type Reply } from '../../support/api.js'
import { NOT_READY } from '../../support/errors.js'
import type { StartedService as ServiceProcess } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'
import { JSON_LOGS_NO_LIMIT, tempDir, type Workspace, workspace } from '../../support/workspace.js'

const KEY = 'storage-faults-key-0123456789'
const FULL = 'the database disk is full; retry later'
const IO = 'the database file cannot be read or written; retry later'
const BUSY = 'the database is locked by another connection; retry later'
const REPLACED = 'the database file was removed or replaced; restart the service'

// ---------------------------------------------------------------- file systems of the test's own

function run(command: string, ...args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Unmounts `dir`, waiting for a process that still holds it; detaches it at worst. */
async function unmount(dir: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      run('umount', dir)
      return
    } catch {
      await sleep(100)
    }
  }
  run('umount', '--lazy', dir)
}

/**
 * A tmpfs of `bytes` mounted for the test, unmounted after it even when it fails. Call it after
 * the workspace: hooks run in the order they were added, so the services are gone by then.
 */
function tmpfs(t: TestContext, bytes: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tmpfs-'))
  run('mount', '-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir)
  t.after(async () => {
    await unmount(dir)
    rmSync(dir, { recursive: true, force: true })
  })
  return dir
}

/**
 * An ext4 file system on a loop device that the kernel remounts read-only at its first error,
 * as Debian mounts its root file system. Why not a tmpfs remounted read-only: Linux refuses that
 * (EBUSY) while a file on it is open for writing, as the database is.
 */
function ext4RemountingReadOnly(t: TestContext): { dir: string; mount: () => void } {
  const image = join(tempDir(t, 'petstore-ext4-'), 'fs.img')
  writeFileSync(image, '')
  run('truncate', '-s', '16M', image)
  run('mkfs.ext4', '-q', '-F', '-O', '^has_journal', image)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-ext4-mount-'))
  const mount = () => run('mount', '-o', 'loop,errors=remount-ro', image, dir)
  mount()
  t.after(async () => {
    await unmount(dir)
    rmSync(dir, { recursive: true, force: true })
  })
  return { dir, mount }
}

/** Raises an ext4 error on the file system mounted at `dir`, as a failing disk would. */
function raiseExt4Error(dir: string): void {
  const device = basename(run('findmnt', '-n', '-o', 'SOURCE', '--target', dir).trim())
  writeFileSync(`/sys/fs/ext4/${device}/trigger_fs_error`, 'petstore test\n')
}

/** Writes zeros into `dir` until its file system has no byte left; returns the filler's path. */
function fillToTheBrim(dir: string): string {
  const path = join(dir, 'filler')
  const fd = openSync(path, 'w')
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size)
      try {
        for (;;) writeSync(fd, chunk)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
      }
    }
  } finally {
    closeSync(fd)
  }
  return path
}

// ---------------------------------------------------------------- the service and its file

async function startOn(harness: Workspace, path: string): Promise<ServiceProcess> {
  return harness.start([], { PETSTORE_DATABASE_URL: `sqlite:${path}`, PETSTORE_API_KEYS: KEY })
}

/**
 * A workspace, then a tmpfs of `bytes` (unmounted once the services are gone), and a service on a
 * file there.
 */
async function serviceOnTmpfs(t: TestContext, bytes: number) {
  const harness = workspace(t, JSON_LOGS_NO_LIMIT)
  const dir = tmpfs(t, bytes)
  const path = join(dir, 'petstore.db')
  return { harness, dir, path, service: await startOn(harness, path) }
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM')
  await service.exited
}

const get = (s: ServiceProcess, path: string) => call(s.port, { path, key: KEY })

function create(
  s: ServiceProcess,
  pet: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return call(s.port, {
    method: 'POST',
    path: '/v1/pets',
    key: KEY,
    body: JSON.stringify(pet),
    headers,
  })
}

/** Creates the pets, each answered 201; returns them as answered. */
async function created(s: ServiceProcess, ...pets: Record<string, unknown>[]): Promise<Pet[]> {
  const answered: Pet[] = []
  for (const pet of pets) {
    const reply = await create(s, pet)
    assert.equal(reply.status, 201, reply.body)
    answered.push(JSON.parse(reply.body) as Pet)
  }
  return answered
}

function assertFault(reply: Reply, message: string, what: string): void {
  assert.equal(reply.status, 503, `${what}: ${reply.body}`)
  assert.deepEqual(JSON.parse(reply.body), { code: 'service_unavailable', message, status: 503 })
  assert.equal(reply.headers['retry-after'], '1', what)
  assert.equal(reply.headers['content-type'], 'application/json; charset=utf-8', what)
}

async function assertNotReady(s: ServiceProcess): Promise<void> {
  const ready = await get(s, '/readyz')
  assert.equal(ready.status, 503, ready.body)
  assert.deepEqual(JSON.parse(ready.body), NOT_READY)
  assert.equal((await get(s, '/healthz')).status, 200)
}

const ready = (s: ServiceProcess) => async () => (await get(s, '/readyz')).status === 200

/**
 * The pets in the file at `path`, read on a connection of the test's own, after checking that the
 * file is whole (PRAGMA integrity_check).
 */
function storedPets(path: string): Pet[] {
  const db = new Database(path, { fileMustExist: true })
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
    const rows = db
      .prepare<[], { id: number; name: string; categoryId: number; status: string | null }>(
        'SELECT id, name, category_id AS categoryId, status FROM pets ORDER BY id',
      )
      .all()
    return rows.map(({ status, ...pet }) => (status === null ? pet : { ...pet, status }))
  } finally {
    db.close()
  }
}

/** Every pet acknowledged with 201 is in `stored`, field for field. */
function assertKept(acknowledged: Pet[], stored: Pet[]): void {
  const byId = new Map(stored.map((p) => [p.id, p]))
  for (const pet of acknowledged) assert.deepEqual(byId.get(pet.id), pet, `pet ${pet.id}`)
}

/**
 * The file a process still holds open at `path` though the path names another file or none:
 * copied out through /proc with the write-ahead log beside it, as an operator would save it.
 */
function copyOpenedFile(pid: number, path: string, into: string): string {
  const fds = readdirSync(`/proc/${pid}/fd`)
  const fd = fds.find((n) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${n}`) === `${path} (deleted)`
    } catch {
      return false
    }
  })
  assert.ok(fd !== undefined, `no open file ${path} (deleted) in process ${pid}`)
  const copy = join(into, 'saved.db')
  copyFileSync(`/proc/${pid}/fd/${fd}`, copy)
  copyFileSync(`${path}-wal`, `${copy}-wal`)
  return copy
}

const statusOf = (reply: Reply) => reply.status

// ---------------------------------------------------------------- the tests

forStore('sqlite', () => {
  describe('SQLite faults: which errors mean that storage cannot serve now', () => {
    test('full, read-only, I/O error, cannot open, busy: 503 with a message of its own; others unchanged', (t) => {
      const path = join(tempDir(t), 'map.db')
      const db = new Database(path)
      t.after(() => db.close())
      db.pragma('journal_mode = WAL')
      db.exec('CREATE TABLE t (v INTEGER UNIQUE)')
      db.exec('INSERT INTO t VALUES (1)')
      const errorOf = (work: () => unknown): unknown => {
        try {
          work()
        } catch (err) {
          return err
        }
        assert.fail('no error')
      }
      const readOnly = new Database(path, { readonly: true })
      t.after(() => readOnly.close())
      const other = new Database(path, { timeout: 0 })
      t.after(() => other.close())
      db.exec('BEGIN IMMEDIATE')
      const cases: [unknown, string][] = [
        [
          errorOf(() => readOnly.exec('INSERT INTO t VALUES (2)')),
          'the database is read-only; retry later',
        ],
        [errorOf(() => other.exec('INSERT INTO t VALUES (3)')), BUSY],
        [
          errorOf(() => new Database(join(tempDir(t), 'missing.db'), { fileMustExist: true })),
          'the database file cannot be opened; retry later',
        ],
        [Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }), FULL],
        [Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_FSYNC' }), IO],
        [Object.assign(new Error('replaced'), { code: FILE_REPLACED }), REPLACED],
      ]
      for (const [err, message] of cases) {
        const mapped = unavailableIfDiskFault(err)
        assert.ok(mapped instanceof StorageUnavailableError, String(err))
        assert.equal(mapped.message, message)
        assert.equal(mapped.retryAfterSeconds, 1)
        assert.equal(mapped.cause, err)
      }
      db.exec('ROLLBACK')
      const constraint = errorOf(() => db.exec('INSERT INTO t VALUES (1)'))
      assert.equal((constraint as { code: string }).code, 'SQLITE_CONSTRAINT_UNIQUE')
      assert.equal(unavailableIfDiskFault(constraint), constraint)
      const bug = new TypeError('x is not a function')
      assert.equal(unavailableIfDiskFault(bug), bug)
    })
  })

  describe('SQLite faults under a running service', () => {
    test('disk full: creates 503 and readiness 503 until space is freed, then both recover by themselves; a keyed create retried gets 201', async (t) => {
      const { dir, path, service } = await serviceOnTmpfs(t, 4 << 20)
      const acknowledged = await created(
        service,
        { name: 'before-1', categoryId: 1 },
        { name: 'before-2', categoryId: 2, status: 'sold' },
      )
      assert.equal((await get(service, '/v1/pets/1')).status, 200)

      const filler = fillToTheBrim(dir)
      // A create, and one with an Idempotency-Key, whose claim is a write of its own.
      assertFault(await create(service, { name: 'full', categoryId: 3 }), FULL, 'create')
      const keyed = { name: 'keyed', categoryId: 4, status: 'pending' }
      const key = { 'idempotency-key': 'disk-full-1' }
      assertFault(await create(service, keyed, key), FULL, 'create with an Idempotency-Key')
      await assertNotReady(service)
      // Reads need no space: they go on.
      const listed = await get(service, '/v1/pets')
      assert.equal(listed.status, 200)
      assert.deepEqual(JSON.parse(listed.body), acknowledged)
      assert.deepEqual(JSON.parse((await get(service, '/v1/pets/2')).body), acknowledged[1])
      // The operator's log says what failed and SQLite's code for it.
      const warnings = service.logLines().filter((l) => l.msg === 'storage unavailable')
      assert.ok(warnings.length >= 2)
      for (const w of warnings) {
        const err = w.err as { message: string; code: string }
        assert.equal(err.code, 'SQLITE_FULL')
        assert.match(err.message, /^the database disk is full; retry later/)
      }

      unlinkSync(filler)
      await until('readiness is back', ready(service))
      acknowledged.push(...(await created(service, { name: 'after', categoryId: 5 })))
      const retried = await create(service, keyed, key)
      assert.equal(retried.status, 201, retried.body)
      assert.equal(retried.headers['idempotent-replayed'], undefined)
      const replayed = await create(service, keyed, key)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.equal(replayed.body, retried.body)
      acknowledged.push(JSON.parse(retried.body) as Pet)

      const stored = storedPets(path)
      assertKept(acknowledged, stored)
      assert.deepEqual(
        stored.map((p) => p.name),
        ['before-1', 'before-2', 'after', 'keyed'],
      )
    })

    test('a file system the kernel turned read-only: creates and readiness 503, reads go on, nothing acknowledged is lost', async (t) => {
      const harness = workspace(t, JSON_LOGS_NO_LIMIT)
      const fs = ext4RemountingReadOnly(t)
      const path = join(fs.dir, 'petstore.db')
      const service = await startOn(harness, path)
      const acknowledged = await created(
        service,
        { name: 'before-1', categoryId: 1, status: 'available' },
        { name: 'before-2', categoryId: 2 },
      )

      raiseExt4Error(fs.dir)
      assert.throws(() => writeFileSync(join(fs.dir, 'probe'), ''), { code: 'EROFS' })
      assertFault(await create(service, { name: 'refused', categoryId: 3 }), IO, 'create')
      assertFault(
        await create(service, { name: 'keyed', categoryId: 3 }, { 'idempotency-key': 'ro-1' }),
        IO,
        'create with an Idempotency-Key',
      )
      await assertNotReady(service)
      assert.deepEqual(JSON.parse((await get(service, '/v1/pets')).body), acknowledged)
      // It lasts: such a file system stays read-only until it is mounted again.
      await sleep(1100)
      await assertNotReady(service)
      assertFault(await create(service, { name: 'refused', categoryId: 3 }), IO, 'create, later')

      await stop(service)
      await unmount(fs.dir)
      fs.mount()
      assertKept(acknowledged, storedPets(path))
      const restarted = await startOn(harness, path)
      assert.ok(await ready(restarted)())
      await created(restarted, { name: 'after', categoryId: 4 })
    })

    test('a write lock held past the busy timeout: creates and readiness 503 while it is held', async (t) => {
      const harness = workspace(t, JSON_LOGS_NO_LIMIT)
      const path = join(harness.dir, 'petstore.db')
      const service = await startOn(harness, path)
      const acknowledged = await created(service, { name: 'before', categoryId: 1 })
      // Another process's connection, as `sqlite3` left in a transaction would be.
      const other = new Database(path)
      t.after(() => other.close())
      other.exec('BEGIN IMMEDIATE')

      assertFault(await create(service, { name: 'locked', categoryId: 2 }), BUSY, 'create')
      assert.equal((await get(service, '/v1/pets/1')).status, 200)
      await assertNotReady(service)

      other.exec('ROLLBACK')
      await until('readiness is back', ready(service))
      acknowledged.push(...(await created(service, { name: 'after', categoryId: 3 })))
      assert.deepEqual(storedPets(path), acknowledged)
    })

    test('the file deleted: no 201 after, reads and readiness 503, and the data can still be saved from the process', async (t) => {
      const { harness, dir, path, service } = await serviceOnTmpfs(t, 16 << 20)
      const acknowledged = await created(
        service,
        { name: 'before-1', categoryId: 1, status: 'pending' },
        { name: 'before-2', categoryId: 2 },
      )
      // Read once, so cached: no cache may serve them from the deleted file.
      assert.equal((await get(service, '/v1/pets')).status, 200)
      assert.equal((await get(service, '/v1/pets/1')).status, 200)

      unlinkSync(path)
      // At once, before any periodic check: the commit is checked before it is acknowledged.
      assertFault(await create(service, { name: 'after', categoryId: 3 }), REPLACED, 'create')
      assertFault(await get(service, '/v1/pets'), REPLACED, 'listPets')
      assertFault(await get(service, '/v1/pets/1'), REPLACED, 'getPet')
      assertFault(
        await create(service, { name: 'keyed', categoryId: 3 }, { 'idempotency-key': 'gone-1' }),
        REPLACED,
        'create with an Idempotency-Key',
      )
      await assertNotReady(service)
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          create(service, { name: `burst-${i}`, categoryId: 4 }),
        ),
      )
      assert.deepEqual(replies.map(statusOf), Array(20).fill(503))

      const saved = copyOpenedFile(service.pid, path, tempDir(t))
      assertKept(acknowledged, storedPets(saved))

      // Stopped, it leaves nothing of the deleted file that the next start would take for its own.
      await stop(service)
      assert.deepEqual(readdirSync(dir), [])
      const restarted = await startOn(harness, path)
      assert.ok(await ready(restarted)())
      assert.equal((await get(restarted, '/v1/pets')).body, '[]')
      await created(restarted, { name: 'anew', categoryId: 5 })
      assert.deepEqual(storedPets(path), [{ id: 1, name: 'anew', categoryId: 5 }])
    })

    test('the file replaced by another (a backup renamed over it): 503 until restarted, which then serves the new file', async (t) => {
      const { harness, dir, path, service } = await serviceOnTmpfs(t, 16 << 20)
      const backedUp = await created(service, { name: 'in-backup', categoryId: 1, status: 'sold' })
      const backup = join(dir, 'backup.db')
      const reader = new Database(path, { readonly: true })
      reader.prepare('VACUUM INTO ?').run(backup)
      reader.close()
      const acknowledged = [
        ...backedUp,
        ...(await created(service, { name: 'later', categoryId: 2 })),
      ]
      assert.equal((await get(service, '/v1/pets')).status, 200)

      renameSync(backup, path)
      assertFault(await create(service, { name: 'after', categoryId: 3 }), REPLACED, 'create')
      assertFault(await get(service, '/v1/pets'), REPLACED, 'listPets')
      assertFault(await get(service, '/v1/pets/2'), REPLACED, 'getPet')
      await assertNotReady(service)
      // The pets made after the backup live only in the replaced file, which the process holds.
      assertKept(acknowledged, storedPets(copyOpenedFile(service.pid, path, tempDir(t))))

      // Stopped, it leaves nothing of the replaced file that the next start would replay.
      await stop(service)
      assert.deepEqual(readdirSync(dir), ['petstore.db'])
      const restarted = await startOn(harness, path)
      assert.ok(await ready(restarted)())
      assert.deepEqual(JSON.parse((await get(restarted, '/v1/pets')).body), backedUp)
      const onBackup = await created(restarted, { name: 'on-the-backup', categoryId: 4 })
      assert.deepEqual(storedPets(path), [...backedUp, ...onBackup])
    })
  })
})
