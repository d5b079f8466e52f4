// Each PostgreSQL test gets a schema of its own, dropped afterwards, so tests never see each
// other's rows. Each test process (one per test file) works in a database of its own: Kysely's
// migrator introspects every schema of its database, and a schema dropped by a test running in
// another process at that moment would make it fail. PostgreSQL must be reachable: the tests fail,
// never skip, without it.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, type TestContext } from 'node:test'
import pg from 'pg'
import { listAllPets, type Pet } from './api.js'
import { type StartedService, startService } from './process.js'
import { ScratchDatabases } from './scratch-databases.js'

export const POSTGRES_ADMIN_URL =
  process.env.PETSTORE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** The store the in-process HTTP tests run on: SQLite unless PETSTORE_TEST_STORE=postgres. */
export const TEST_STORE = process.env.PETSTORE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite'

const databases = new ScratchDatabases(
  POSTGRES_ADMIN_URL,
  'petstore_test_',
  'the PostgreSQL tests need it',
)

let processDatabase: Promise<string> | undefined
let createdDatabase: string | undefined

// Registered when the module loads, so it belongs to the file's root and runs after all its tests.
after(async () => {
  if (createdDatabase !== undefined) await databases.drop(createdDatabase)
})

/** This process's database: made on first use, dropped when the file's tests end. */
function databaseUrl(): Promise<string> {
  processDatabase ??= databases.create().then(({ name, url }) => {
    createdDatabase = name
    return url
  })
  return processDatabase
}

/** A database URL whose connections use a new, empty schema; the schema is dropped after `t`. */
export async function freshPostgresUrl(t: TestContext): Promise<string> {
  const base = await databaseUrl()
  const schema = `t_${randomBytes(6).toString('hex')}`
  await databases.connected((c) => c.query(`CREATE SCHEMA ${schema}`), base)
  t.after(() => databases.connected((c) => c.query(`DROP SCHEMA ${schema} CASCADE`), base))
  const url = new URL(base)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

/**
 * A database of the test's own, for a test that changes the database itself (ALTER DATABASE, its
 * connections ended); dropped after `t` whatever state the test left it in.
 */
export async function freshPostgresDatabase(
  t: TestContext,
): Promise<{ name: string; url: string }> {
  const db = await databases.create()
  t.after(() => databases.drop(db.name))
  return db
}

/** Runs one statement as the administrator, on the administrator's own database. */
export function adminQuery<R extends pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return databases.connected((c) => c.query<R>(text, values))
}

/** Ends every connection to `database` but the administrator's own, as a failover or a restart would. */
export async function endConnections(database: string): Promise<void> {
  await adminQuery(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  )
}

/** The pets as the database at `url` holds them, in the API's shape, by id. */
export async function storedPets(url: string): Promise<Pet[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const { rows } = await client
    .query<{ id: string; name: string; category_id: string; status: string | null }>(
      'SELECT id::text, name, category_id::text, status FROM pets ORDER BY pets.id',
    )
    .finally(() => client.end())
  return rows.map((r) => ({
    id: Number(r.id),
    name: r.name,
    categoryId: Number(r.category_id),
    ...(r.status === null ? {} : { status: r.status }),
  }))
}

/**
 * Every pet acknowledged with 201 is in the database, field for field, exactly once, and the API
 * shows what the database holds.
 */
export async function assertAcknowledgedStored(
  service: StartedService,
  key: string,
  url: string,
  acknowledged: { id: number }[],
): Promise<void> {
  const stored = await storedPets(url)
  const byId = new Map(stored.map((p) => [p.id, p]))
  for (const pet of acknowledged) assert.deepEqual(byId.get(pet.id), pet)
  assert.equal(new Set(stored.map((p) => p.name)).size, stored.length, 'a name stored twice')
  assert.deepEqual(await listAllPets(service, key), stored)
}

/** A session of its own holding a lock until told to let go (again: a no-op). */
export async function holding(
  url: string,
  lock: string,
): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('BEGIN')
  await client.query(lock)
  let released: Promise<void> | undefined
  return {
    release: () => {
      released ??= client.query('COMMIT').then(() => client.end())
      return released
    },
  }
}

/** A database URL whose sessions are tagged, and how long a tagged statement waits for a lock. */
export interface WatchedSessions {
  /** `url` with an application_name of its own: hand it to the service. */
  url: string
  /** Seconds a tagged statement whose text is LIKE `pattern` has waited for a lock; null: none. */
  lockWait(pattern: string): Promise<number | null>
  /** Whether a tagged statement whose text is LIKE `pattern` is running. */
  running(pattern: string): Promise<boolean>
}

export async function watchedSessions(t: TestContext, url: string): Promise<WatchedSessions> {
  const app = `petstore-watched-${randomBytes(4).toString('hex')}`
  const tagged = new URL(url)
  tagged.searchParams.set('application_name', app)
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  t.after(() => admin.end())
  return {
    url: tagged.toString(),
    lockWait: async (pattern) => {
      const { rows } = await admin.query<{ waited: number }>(
        `SELECT extract(epoch FROM clock_timestamp() - query_start)::float8 AS waited
         FROM pg_stat_activity
         WHERE application_name = $1 AND query LIKE $2 AND wait_event_type = 'Lock'`,
        [app, pattern],
      )
      return rows[0]?.waited ?? null
    },
    running: async (pattern) => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity
         WHERE application_name = $1 AND query LIKE $2 AND state = 'active'`,
        [app, pattern],
      )
      return rows.length > 0
    },
  }
}

/**
 * A service on a fresh database, its sessions watched, with PETSTORE_DATABASE_TIMEOUT `timeoutMs`
 * and the settings in `env`.
 */
export async function serviceOnWatchedDatabase(
  t: TestContext,
  timeoutMs: number,
  env: Record<string, string> = {},
): Promise<{ url: string; sessions: WatchedSessions; service: StartedService }> {
  const url = await freshPostgresUrl(t)
  const sessions = await watchedSessions(t, url)
  const service = await startService(t, {
    env: {
      PETSTORE_DATABASE_URL: sessions.url,
      PETSTORE_DATABASE_TIMEOUT: `${timeoutMs}ms`,
      PETSTORE_LOG_LEVEL: 'warn',
      ...env,
    },
  })
  return { url, sessions, service }
}
