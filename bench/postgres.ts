// The PostgreSQL databases of `npm run bench`: one fresh database per service, made by the
// administrator's connection and dropped at the end, also after a failure or Ctrl-C.
import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The administrator's connection: any database of the server, by a role that may CREATE DATABASE. */
export const POSTGRES_ADMIN_URL =
  process.env.PETSTORE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

const PREFIX = 'petstore_bench_'

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: POSTGRES_ADMIN_URL,
    connectionTimeoutMillis: 5000,
  })
  try {
    await client.connect()
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL} (${(err as Error).message}); ` +
        'start it, set PETSTORE_BENCH_POSTGRES_URL, or leave it out with --stores sqlite',
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

/** A new, empty database; ones left by bench processes that no longer run are dropped first. */
export function createDatabase(): Promise<{ name: string; url: string }> {
  return withAdmin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname LIKE $1',
      [`${PREFIX}%`],
    )
    for (const { datname } of rows) {
      const pid = Number(datname.slice(PREFIX.length).split('_')[0])
      if (!isRunning(pid)) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)
    }
    const name = `${PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`
    await c.query(`CREATE DATABASE ${name}`)
    const url = new URL(POSTGRES_ADMIN_URL)
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  })
}

/** Drops the database even while a service is still connected to it. */
export function dropDatabase(name: string): Promise<void> {
  return withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  })
}

/** The server's version and the settings that decide what a create costs, for the results. */
export function serverSettings(): Promise<string> {
  return withAdmin(async (c) => {
    const { rows } = await c.query<{ name: string; setting: string }>(
      `SELECT name, current_setting(name) AS setting FROM pg_settings
       WHERE name IN ('server_version', 'synchronous_commit', 'fsync', 'shared_buffers') ORDER BY name`,
    )
    return rows.map((r) => `${r.name}=${r.setting}`).join(', ')
  })
}
