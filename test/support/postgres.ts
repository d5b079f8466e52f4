// Each PostgreSQL test gets a schema of its own, dropped afterwards, so tests never see each
// other's rows. Each test process (one per test file) works in a database of its own: Kysely's
// migrator introspects every schema of its database, and a schema dropped by a test running in
// another process at that moment would make it fail. PostgreSQL must be reachable: the tests fail,
// never skip, without it.
import { randomBytes } from 'node:crypto'
import { after, type TestContext } from 'node:test'
import pg from 'pg'

export const POSTGRES_ADMIN_URL =
  process.env.PETSTORE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** The store the in-process HTTP tests run on: SQLite unless PETSTORE_TEST_STORE=postgres. */
export const TEST_STORE = process.env.PETSTORE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite'

const DATABASE_PREFIX = 'petstore_test_'

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  try {
    await client.connect()
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${url} (${(err as Error).message}); the PostgreSQL tests need it`,
    )
  }
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

let processDatabase: Promise<string> | undefined
let createdDatabase: string | undefined

// Registered when the module loads, so it belongs to the file's root and runs after all its tests.
after(async () => {
  const name = createdDatabase
  if (name === undefined) return
  await withClient(POSTGRES_ADMIN_URL, (c) =>
    c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  )
})

/** This process's database: made on first use, dropped when the file's tests end. */
function databaseUrl(): Promise<string> {
  processDatabase ??= withClient(POSTGRES_ADMIN_URL, async (c) => {
    // Databases left by test processes that were killed are dropped here.
    const { rows } = await c.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname LIKE $1',
      [`${DATABASE_PREFIX}%`],
    )
    for (const { datname } of rows) {
      const pid = Number(datname.slice(DATABASE_PREFIX.length).split('_')[0])
      if (!isRunning(pid)) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)
    }
    const name = `${DATABASE_PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`
    await c.query(`CREATE DATABASE ${name}`)
    createdDatabase = name
    const url = new URL(POSTGRES_ADMIN_URL)
    url.pathname = `/${name}`
    return url.toString()
  })
  return processDatabase
}

/** A database URL whose connections use a new, empty schema; the schema is dropped after `t`. */
export async function freshPostgresUrl(t: TestContext): Promise<string> {
  const base = await databaseUrl()
  const schema = `t_${randomBytes(6).toString('hex')}`
  await withClient(base, (c) => c.query(`CREATE SCHEMA ${schema}`))
  t.after(() => withClient(base, (c) => c.query(`DROP SCHEMA ${schema} CASCADE`)))
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
  const name = `${DATABASE_PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`
  await withClient(POSTGRES_ADMIN_URL, (c) => c.query(`CREATE DATABASE ${name}`))
  t.after(() =>
    withClient(POSTGRES_ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  )
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  return { name, url: url.toString() }
}

/** Runs one statement as the administrator, on the administrator's own database. */
export function adminQuery<R extends pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return withClient(POSTGRES_ADMIN_URL, (c) => c.query<R>(text, values))
}
