// The PostgreSQL databases of `npm run bench`: one fresh database per service, made by the
// administrator's connection and dropped at the end, also after a failure or Ctrl-C.
import { ScratchDatabases } from '../test/support/scratch-databases.js'

/** The administrator's connection: any database of the server, by a role that may CREATE DATABASE. */
export const POSTGRES_ADMIN_URL =
  process.env.PETSTORE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

const databases = new ScratchDatabases(
  POSTGRES_ADMIN_URL,
  'petstore_bench_',
  'start it, set PETSTORE_BENCH_POSTGRES_URL, or leave it out with --stores sqlite',
)

/** A new, empty database; ones left by bench processes that no longer run are dropped first. */
export const createDatabase = () => databases.create()

/** Drops the database even while a service is still connected to it. */
export const dropDatabase = (name: string) => databases.drop(name)

/** The server's version and the settings that decide what a create costs, for the results. */
export function serverSettings(): Promise<string> {
  return databases.connected(async (c) => {
    const { rows } = await c.query<{ name: string; setting: string }>(
      `SELECT name, current_setting(name) AS setting FROM pg_settings
       WHERE name IN ('server_version', 'synchronous_commit', 'fsync', 'shared_buffers') ORDER BY name`,
    )
    return rows.map((r) => `${r.name}=${r.setting}`).join(', ')
  })
}
