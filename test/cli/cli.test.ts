// The `petstore` command as an operator runs it: `node dist/main.js ...` in its own process,
// with servers started the same way on the same database file.
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import packageJson from '../../package.json' with { type: 'json' }
import { settings } from '../../src/config.js'
import { SQLITE_MIGRATION_NAMES } from '../../src/storage/sqlite/migration-names.js'
import { INVALID_TOKEN } from '../support/errors.js'
import { bootstrapKey, type StartedService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { assertUsageErrors, workspace } from '../support/workspace.js'

const KEY_PATTERN = /^pet_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/
const ANY_KEY = /pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/g
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface CreatedKey {
  key: string
  id: string
  secret: string
  stdout: string
}

/** A workspace (see support/workspace.ts) that also makes keys through the CLI. */
function cliWorkspace(t: TestContext) {
  const w = workspace(t)
  const serve = (env: Record<string, string> = {}): Promise<StartedService> => w.start([], env)

  const createKey = async (args: string[], env: Record<string, string> = {}) => {
    const res = await w.run(['keys', 'create', ...args], env)
    assert.equal(res.code, 0, res.stderr)
    assert.equal(res.stderr, '')
    const lines = res.stdout.split('\n')
    assert.equal(lines.pop(), '', 'stdout ends with a newline')
    const key = lines.at(-1)!
    const m = KEY_PATTERN.exec(key)
    assert.ok(m, `last line is the key alone: ${JSON.stringify(key)}`)
    return { key, id: m[1]!, secret: m[2]!, stdout: res.stdout } satisfies CreatedKey
  }

  return { ...w, serve, createKey }
}

async function listPets(origin: string, key: string): Promise<Response> {
  return fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
}

async function assertAccepted(origin: string, key: string): Promise<void> {
  const res = await listPets(origin, key)
  assert.equal(res.status, 200)
  assert.equal(await res.text(), '[]')
}

async function assertRefused(origin: string, key: string): Promise<void> {
  const res = await listPets(origin, key)
  assert.equal(res.status, 401)
  assert.equal(
    res.headers.get('www-authenticate'),
    'Bearer realm="petstore", error="invalid_token"',
  )
  assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.deepEqual(await res.json(), INVALID_TOKEN)
}

/** `value` is an ISO instant no earlier than `start` and less than a minute after it. */
function assertInstantFrom(value: unknown, start: string): void {
  assert.equal(typeof value, 'string')
  assert.match(value as string, ISO_INSTANT)
  const offset = Date.parse(value as string) - Date.parse(start)
  assert.ok(offset >= 0 && offset < 60_000, `${value} is not just after ${start}`)
}

storeIndependent(() => {
  // Each test has its own directory and database, so they run side by side.
  describe('petstore keys', { concurrency: true }, () => {
    test('keys create prints the key alone on its last line, and only its hash is stored', async (t) => {
      const w = cliWorkspace(t)
      const plain = await w.createKey(['--name', 'ci bot'])
      assert.equal(
        plain.stdout,
        `Created API key ${plain.id} named "ci bot", with no expiry.\n` +
          'Store it now: it is shown only this once.\n' +
          `${plain.key}\n`,
      )

      const now = '2026-03-01T00:00:00.000Z'
      const expiring = await w.createKey(['--name', 'deploy', '--expires-in', '30d'], {
        PETSTORE_NOW: now,
      })
      const m = /^Created API key ([0-9a-f]{12}) named "deploy", expiring (\S+)\.\n/.exec(
        expiring.stdout,
      )
      assert.ok(m, expiring.stdout)
      assert.equal(m[1], expiring.id)
      assertInstantFrom(new Date(Date.parse(m[2]!) - 30 * 86_400_000).toISOString(), now)
      assert.equal(
        expiring.stdout,
        `${m[0]}Store it now: it is shown only this once.\n${expiring.key}\n`,
      )
      assert.notEqual(plain.id, expiring.id)

      for (const file of [w.dbPath, `${w.dbPath}-wal`].filter((f) => existsSync(f))) {
        const bytes = readFileSync(file)
        for (const k of [plain, expiring]) {
          assert.equal(bytes.includes(k.secret), false, `${file} holds a key secret`)
        }
      }
    })

    test('keys list shows id, name and state, never the key, as a table and as JSON', async (t) => {
      const w = cliWorkspace(t)
      const at = (minute: number) => `2026-03-01T00:0${minute}:00.000Z`
      const alpha = await w.createKey(['--name', 'alpha'], { PETSTORE_NOW: at(0) })
      const beta = await w.createKey(['--name', 'beta team', '--expires-in', '1h'], {
        PETSTORE_NOW: at(1),
      })
      const gamma = await w.createKey(['--name', 'gamma'], { PETSTORE_NOW: at(2) })
      const betaExpiry = /, expiring (\S+)\.\n/.exec(beta.stdout)![1]!
      const revoke = await w.run(['keys', 'revoke', gamma.id], { PETSTORE_NOW: at(3) })
      assert.equal(revoke.code, 0, revoke.stderr)

      const later = { PETSTORE_NOW: '2026-03-01T02:00:00.000Z' }
      const asJson = await w.run(['keys', 'list', '--json'], later)
      assert.equal(asJson.code, 0, asJson.stderr)
      assert.equal(asJson.stderr, '')
      const rows = JSON.parse(asJson.stdout) as Record<string, unknown>[]
      assert.ok(Array.isArray(rows))
      assertInstantFrom(rows[0]?.createdAt, at(0))
      assertInstantFrom(rows[1]?.createdAt, at(1))
      assertInstantFrom(rows[2]?.createdAt, at(2))
      assertInstantFrom(rows[2]?.revokedAt, at(3))
      const created = rows.map((r) => r.createdAt)
      assert.deepEqual(rows, [
        {
          id: alpha.id,
          name: 'alpha',
          state: 'active',
          createdAt: created[0],
          expiresAt: null,
          revokedAt: null,
        },
        {
          id: beta.id,
          name: 'beta team',
          state: 'expired',
          createdAt: created[1],
          expiresAt: betaExpiry,
          revokedAt: null,
        },
        {
          id: gamma.id,
          name: 'gamma',
          state: 'revoked',
          createdAt: created[2],
          expiresAt: null,
          revokedAt: rows[2]!.revokedAt,
        },
      ])

      const asTable = await w.run(['keys', 'list'], later)
      assert.equal(asTable.code, 0, asTable.stderr)
      assert.equal(asTable.stderr, '')
      assert.deepEqual(
        asTable.stdout
          .trimEnd()
          .split('\n')
          .map((line) => line.split(/ {2,}/)),
        [
          ['ID', 'NAME', 'STATE', 'CREATED', 'EXPIRES'],
          [alpha.id, 'alpha', 'active', created[0], '-'],
          [beta.id, 'beta team', 'expired', created[1], betaExpiry],
          [gamma.id, 'gamma', 'revoked', created[2], '-'],
        ],
      )

      for (const out of [asJson.stdout, asTable.stdout]) {
        for (const k of [alpha, beta, gamma]) {
          assert.equal(out.includes(k.key), false, 'a key is listed')
          assert.equal(out.includes(k.secret), false, 'a key secret is listed')
        }
      }
    })

    test('keys list on an empty database', async (t) => {
      const w = cliWorkspace(t)
      const asJson = await w.run(['keys', 'list', '--json'])
      assert.deepEqual(asJson, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
      const asTable = await w.run(['keys', 'list'])
      assert.deepEqual(asTable, { code: 0, signal: null, stdout: 'No API keys.\n', stderr: '' })
    })

    test('keys revoke: a server already running refuses the key from its next request', async (t) => {
      const w = cliWorkspace(t)
      const created = await w.createKey(['--name', 'leaked'])
      const other = await w.createKey(['--name', 'kept'])
      const server = await w.serve()
      await assertAccepted(server.origin, created.key)

      const revoke = await w.run(['keys', 'revoke', created.id])
      assert.deepEqual(revoke, {
        code: 0,
        signal: null,
        stdout: `Revoked API key ${created.id}. Requests with it are refused from now on.\n`,
        stderr: '',
      })
      await assertRefused(server.origin, created.key)
      await assertAccepted(server.origin, other.key)

      const again = await w.run(['keys', 'revoke', created.id])
      assert.deepEqual(again, {
        code: 2,
        signal: null,
        stdout: '',
        stderr: `petstore: no active API key with id ${created.id}\n`,
      })
    })

    test('an expired key is refused with 401 invalid_token', async (t) => {
      const w = cliWorkspace(t)
      const created = await w.createKey(['--name', 'short-lived', '--expires-in', '1h'], {
        PETSTORE_NOW: '2026-01-01T00:00:00Z',
      })
      const before = await w.serve({ PETSTORE_NOW: '2026-01-01T00:30:00Z' })
      const after = await w.serve({ PETSTORE_NOW: '2026-01-01T02:00:00Z' })
      await assertAccepted(before.origin, created.key)
      await assertRefused(after.origin, created.key)
    })

    test('keys revoke of an unknown id exits 2 with a message on stderr', async (t) => {
      const w = cliWorkspace(t)
      await w.createKey(['--name', 'present'])
      const res = await w.run(['keys', 'revoke', '0123456789ab'])
      assert.deepEqual(res, {
        code: 2,
        signal: null,
        stdout: '',
        stderr: 'petstore: no active API key with id 0123456789ab\n',
      })
    })
  })

  describe('petstore usage', { concurrency: true }, () => {
    test('bad arguments exit 2 with a clear message on stderr and touch no database', async (t) => {
      const w = cliWorkspace(t)
      const cases: [string[], string][] = [
        [['keys', 'create'], "error: required option '--name <name>' not specified"],
        [
          ['keys', 'create', '--name', 'x', '--expires-in', 'abc'],
          "error: option '--expires-in <duration>' argument 'abc' is invalid. expected a duration such as 90s, 30m, 12h, 30d or 2w",
        ],
        [
          ['keys', 'create', '--name', ''],
          "error: option '--name <name>' argument '' is invalid. expected 1 to 100 printable ASCII characters",
        ],
        [['frobnicate'], "error: unknown command 'frobnicate'"],
        [['keys', 'revoke'], "error: missing required argument 'id'"],
        [['keys', 'list', '--yaml'], "error: unknown option '--yaml'"],
      ]
      await assertUsageErrors(w, cases)
      assert.equal(existsSync(w.dbPath), false)
    })

    test('--help exits 0 at every level and prints usage', async (t) => {
      const w = cliWorkspace(t)
      const levels: [string[], string][] = [
        [['--help'], 'Usage: petstore [options] [command]'],
        [['-h'], 'Usage: petstore [options] [command]'],
        [['help'], 'Usage: petstore [options] [command]'],
        [['serve', '--help'], 'Usage: petstore serve [options]'],
        [['migrate', '--help'], 'Usage: petstore migrate [options]'],
        [['keys', '--help'], 'Usage: petstore keys [options] [command]'],
        [['help', 'keys'], 'Usage: petstore keys [options] [command]'],
        [['keys', 'create', '--help'], 'Usage: petstore keys create [options]'],
        [['keys', 'list', '--help'], 'Usage: petstore keys list [options]'],
        [['keys', 'revoke', '--help'], 'Usage: petstore keys revoke [options] <id>'],
      ]
      // A bad setting does not matter: help never reads the configuration.
      const results = await Promise.all(levels.map(([args]) => w.run(args, { PORT: 'abc' })))
      for (const [i, [args, usage]] of levels.entries()) {
        const res = results[i]!
        assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`)
        assert.equal(res.stderr, '', args.join(' '))
        assert.equal(res.stdout.split('\n')[0], usage, args.join(' '))
      }
      const top = await w.run(['--help'])
      for (const command of ['serve', 'migrate', 'keys']) {
        assert.match(top.stdout, new RegExp(`^  ${command} `, 'm'))
      }
      assert.equal(existsSync(w.dbPath), false)
    })

    test('--version prints the version; serve --help names every setting it reads', async (t) => {
      const w = cliWorkspace(t)
      for (const flag of ['--version', '-V']) {
        assert.deepEqual(await w.run([flag], { PORT: 'abc' }), {
          code: 0,
          signal: null,
          stdout: `${packageJson.version}\n`,
          stderr: '',
        })
      }
      const help = await w.run(['serve', '--help'])
      assert.equal(help.code, 0)
      const listed = [...help.stdout.matchAll(/^ {2}([A-Z][A-Z0-9_]+)$/gm)].map((m) => m[1])
      assert.deepEqual(
        listed,
        settings.map((s) => s.env),
      )
      assert.match(help.stdout, /^ {2}PORT\n {6}TCP port of the API\. Default: 8080\.$/m)
      assert.ok(
        help.stdout.split('\n').every((line) => line.length <= 80),
        'lines fit a terminal',
      )
    })

    test('a bad environment value makes serve exit 2 naming the variable', async (t) => {
      const w = cliWorkspace(t)
      const res = await w.run(['serve'], { PORT: 'abc', HOST: '127.0.0.1' })
      assert.deepEqual(res, {
        code: 2,
        signal: null,
        stdout: '',
        stderr:
          'petstore: invalid configuration:\n  PORT="abc" is invalid: expected an integer from 0 to 65535\n',
      })
      const url = await w.run(['keys', 'list'], { PETSTORE_DATABASE_URL: 'mysql://db/petstore' })
      assert.deepEqual(url, {
        code: 2,
        signal: null,
        stdout: '',
        stderr:
          'petstore: invalid configuration:\n  PETSTORE_DATABASE_URL="mysql://db/petstore" is invalid: expected `sqlite:<path>` or `postgres://user@host:port/database`\n',
      })
      assert.equal(existsSync(w.dbPath), false)
    })
  })

  describe('petstore serve and migrate', { concurrency: true }, () => {
    test('first start with no key, output not a terminal: the key goes to a 0600 file, only its path to stdout', async (t) => {
      const w = cliWorkspace(t)
      const first = await w.serve({ PETSTORE_LOG_LEVEL: 'info' })
      const path = join(w.dir, 'bootstrap-key')
      const key = bootstrapKey(w.dir)
      const id = KEY_PATTERN.exec(key)![1]!
      assert.equal(statSync(path).mode & 0o777, 0o600)
      assert.equal(readFileSync(path, 'utf8'), `${key}\n`)
      assert.deepEqual(first.stdout().match(/^petstore: no API key existed.*$/gm), [
        `petstore: no API key existed, so one was created (id ${id}); the bootstrap API key was written to ${path}, readable only by this user`,
      ])
      await assertAccepted(first.origin, key)
      assert.deepEqual(await first.stop(), { code: 0, signal: null })
      // Neither the start nor the request that used the key wrote it anywhere but the file.
      for (const text of [first.stdout(), first.stderr()]) {
        assert.deepEqual(text.match(ANY_KEY), null, text)
        assert.equal(text.includes(key.slice('pet_0123456789ab_'.length)), false)
      }
      assert.equal(first.stderr(), '')

      const second = await w.serve({ PETSTORE_LOG_LEVEL: 'info' })
      await assertAccepted(second.origin, key)
      assert.deepEqual(await second.stop(), { code: 0, signal: null })
      assert.deepEqual(second.stdout().match(ANY_KEY), null)
      assert.equal(second.stdout().includes('no API key existed'), false)
      assert.equal(readFileSync(path, 'utf8'), `${key}\n`)

      const list = await w.run(['keys', 'list', '--json'])
      const rows = JSON.parse(list.stdout) as { id: string; name: string; state: string }[]
      assert.deepEqual(
        rows.map((r) => [r.id, r.name, r.state]),
        [[id, 'bootstrap', 'active']],
      )
    })

    test('a misspelt setting stops the command with exit 2, naming the setting it is closest to', async (t) => {
      const w = cliWorkspace(t)
      const misspelt = { PETSTORE_DATABSE_URL: `sqlite:${join(w.dir, 'other.db')}` }
      const expected = {
        code: 2,
        signal: null,
        stdout: '',
        stderr:
          'petstore: invalid configuration:\n  PETSTORE_DATABSE_URL is not a setting; did you mean PETSTORE_DATABASE_URL? (petstore serve --help lists them)\n',
      }
      assert.deepEqual(await w.run(['migrate'], misspelt), expected)
      assert.deepEqual(await w.run(['serve'], { ...misspelt, PORT: '0' }), expected)
      // From .env just the same: nothing was opened, neither the default file nor the misspelt one.
      writeFileSync(join(w.dir, '.env'), `PETSTORE_DATABSE_URL=${misspelt.PETSTORE_DATABSE_URL}\n`)
      assert.deepEqual(await w.run(['serve'], { PORT: '0' }), expected)
      assert.equal(existsSync(join(w.dir, 'other.db')), false)
      assert.equal(existsSync(w.dbPath), false)
    })

    test('a configured key means no bootstrap key is made', async (t) => {
      const w = cliWorkspace(t)
      const configured = 'configured-key-0123456789'
      const server = await w.serve({ PETSTORE_API_KEYS: configured })
      await assertAccepted(server.origin, configured)
      assert.deepEqual(server.stdout().match(ANY_KEY), null)
      const list = await w.run(['keys', 'list', '--json'])
      assert.deepEqual(list, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
    })

    test('a bootstrap-key file left from an earlier database stops the first start, storing nothing', async (t) => {
      const w = cliWorkspace(t)
      const path = join(w.dir, 'bootstrap-key')
      writeFileSync(path, 'pet_000000000000_earlier\n')
      const res = await w.run(['serve'], { PORT: '0', HOST: '127.0.0.1' })
      assert.deepEqual(res, {
        code: 1,
        signal: null,
        stdout: '',
        stderr: `petstore: ${path} already exists: a bootstrap key is only written to a new file; remove it (its key belongs to an earlier database) or set PETSTORE_BOOTSTRAP_KEY_FILE\n`,
      })
      assert.equal(readFileSync(path, 'utf8'), 'pet_000000000000_earlier\n')
      const list = await w.run(['keys', 'list', '--json'])
      assert.deepEqual(list, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
    })

    test('a database path that cannot hold a store names PETSTORE_DATABASE_URL, exit 2, for every command', async (t) => {
      const w = cliWorkspace(t)
      const file = join(w.dir, 'hostname')
      writeFileSync(file, 'not a database\n')
      const cases: [string, string][] = [
        [`sqlite:${file}/x.db`, `cannot create the folder ${file} (EEXIST: a file is in the way)`],
        [
          `sqlite:${file}/sub/x.db`,
          `cannot create the folder ${file}/sub (ENOTDIR: a file is in the way)`,
        ],
        [
          `sqlite:${w.dir}`,
          `cannot open ${w.dir} as a SQLite database (SQLITE_CANTOPEN: unable to open database file)`,
        ],
        [
          `sqlite:${file}`,
          `cannot open ${file} as a SQLite database (SQLITE_NOTADB: file is not a database)`,
        ],
      ]
      for (const [url, reason] of cases) {
        for (const args of [['migrate'], ['serve'], ['keys', 'list']]) {
          const res = await w.run(args, { PETSTORE_DATABASE_URL: url })
          assert.deepEqual(
            res,
            {
              code: 2,
              signal: null,
              stdout: '',
              stderr: `petstore: invalid configuration:\n  PETSTORE_DATABASE_URL=${JSON.stringify(url)} cannot be used: ${reason}\n`,
            },
            `${args.join(' ')} on ${url}`,
          )
        }
      }
      assert.equal(readFileSync(file, 'utf8'), 'not a database\n')
    })

    test('a bootstrap-key file that cannot be made names PETSTORE_BOOTSTRAP_KEY_FILE, exit 2', async (t) => {
      const w = cliWorkspace(t)
      const file = join(w.dir, 'hostname')
      writeFileSync(file, 'a file\n')
      const res = await w.run(['serve'], { PETSTORE_BOOTSTRAP_KEY_FILE: `${file}/key` })
      assert.deepEqual(res, {
        code: 2,
        signal: null,
        stdout: '',
        stderr: `petstore: invalid configuration:\n  PETSTORE_BOOTSTRAP_KEY_FILE="${file}/key" cannot be used: cannot create ${file}/key (ENOTDIR: a file is in the way)\n`,
      })
      const list = await w.run(['keys', 'list', '--json'])
      assert.deepEqual(list, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
    })

    test('migrate exits 0 and creates the database file and its folder', async (t) => {
      const w = cliWorkspace(t)
      const nested = join(w.dir, 'data', 'nested', 'petstore.db')
      const env = { PETSTORE_DATABASE_URL: `sqlite:${nested}` }
      assert.equal(existsSync(nested), false)
      const res = await w.run(['migrate'], env)
      assert.deepEqual(res, {
        code: 0,
        signal: null,
        stdout: `${SQLITE_MIGRATION_NAMES.map((n) => `applied migration ${n}\n`).join('')}database is up to date (sqlite: sqlite:${nested})\n`,
        stderr: '',
      })
      assert.equal(existsSync(nested), true)
      const again = await w.run(['migrate'], env)
      assert.equal(again.code, 0, again.stderr)
      const list = await w.run(['keys', 'list', '--json'], env)
      assert.deepEqual(list, { code: 0, signal: null, stdout: '[]\n', stderr: '' })
    })
  })
})
