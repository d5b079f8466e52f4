// Each PostgreSQL test gets a schema of its own in the `test` database, dropped afterwards, so
// tests never see each other's rows. PostgreSQL must be reachable: a test fails, never skips.
import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import pg from 'pg'

export const POSTGRES_ADMIN_URL =
  process.env.PETSTORE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: POSTGRES_ADMIN_URL,
    connectionTimeoutMillis: 5000,
  })
  try {
    await client.connect()
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL} (${(err as Error).message}); the PostgreSQL tests need it`,
    )
  }
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** A database URL whose connections use a new, empty schema; the schema is dropped after `t`. */
export async function freshPostgresUrl(t: TestContext): Promise<string> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  await admin((c) => c.query(`CREATE SCHEMA ${schema}`))
  t.after(() => admin((c) => c.query(`DROP SCHEMA ${schema} CASCADE`)))
  const url = new URL(POSTGRES_ADMIN_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

/** The store the in-process HTTP tests run on: SQLite unless PETSTORE_TEST_STORE=postgres. */
export const TEST_STORE = process.env.PETSTORE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite'
