// Brings a PostgreSQL database's schema up to date before a store opens on it, and tells whether
// a pooler stands between the service and the server.
import {
  CompiledQuery,
  type DatabaseConnection,
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
} from 'kysely'
import pg from 'pg'
import { postgresMigrations } from './migrations.js'
import { beginBounded, newPool, type PostgresOptions } from './pool.js'
import { unavailability } from './unavailability.js'

/** Kysely's own lock id, which older releases take as a session lock: each waits for the other. */
const MIGRATION_LOCK = '3853314791062309107'

/**
 * Kysely's dialect with its migration lock held by the migrations' transaction, taken as it
 * begins (with its bounds, in one round trip), rather than by the session: behind a pooler in
 * transaction mode a session's lock stays on a server connection that other clients then use,
 * and its release may reach another one.
 */
function migrationDialect(pool: pg.Pool, timeoutMs: number): PostgresDialect {
  const begin = CompiledQuery.raw(
    `${beginBounded(timeoutMs)}; SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`,
  )
  class Driver extends PostgresDriver {
    override async beginTransaction(connection: DatabaseConnection): Promise<void> {
      await connection.executeQuery(begin)
    }
  }
  class Adapter extends PostgresAdapter {
    override async acquireMigrationLock(): Promise<void> {}
    override async releaseMigrationLock(): Promise<void> {}
  }
  return new (class extends PostgresDialect {
    override createDriver(): PostgresDriver {
      return new Driver({ pool })
    }
    override createAdapter(): PostgresAdapter {
      return new Adapter()
    }
  })({ pool })
}

/** The server named by `url`, as an operator would look for it. */
function serverOf(url: string): string {
  const { hostname, port } = new URL(url)
  return `PostgreSQL at ${hostname}:${port || 5432}`
}

/** 3D000, or PgBouncer's word for it: it passes the server's message on under 08P01. */
const MISSING_DATABASE = /^database "(.+)" does not exist$/

/**
 * The failure to make the first connection of a start, worded for the operator: no answer at all,
 * a refusal, or a database that is not there. Any other error (a bug) is returned as it was.
 */
function startFailure(url: string, err: unknown): unknown {
  const server = serverOf(url)
  if (err instanceof pg.DatabaseError) {
    if (err.code === '3D000' || MISSING_DATABASE.test(err.message)) {
      // The database `url` names, or, where it names none, the one the server reported.
      const named = decodeURIComponent(new URL(url).pathname.slice(1))
      const name = named || (MISSING_DATABASE.exec(err.message)?.[1] ?? '')
      return new Error(
        `${server} has no database "${name}" (create it with createdb ${name}, or fix PETSTORE_DATABASE_URL)`,
        { cause: err },
      )
    }
    return new Error(`${server} refused the connection: ${err.message}`, { cause: err })
  }
  if (unavailability(err) === null) return err
  return new Error(`${server} is not reachable (${(err as Error).message})`, { cause: err })
}

/** The first connection's schema, and whether its server process is the one the handshake named. */
async function probe(pool: pg.Pool, url: string): Promise<{ schema: string; pooled: boolean }> {
  const client = await pool.connect().catch((err: unknown) => {
    throw startFailure(url, err)
  })
  try {
    const { rows } = await client.query<{ schema: string; pid: number }>(
      'SELECT current_schema() AS schema, pg_backend_pid() AS pid',
    )
    client.release()
    // A pooler answers the handshake itself, with a cancel key of its own, and runs statements on
    // server processes of its choosing: the pid in that key is not the one running them.
    const { processID } = client as unknown as { processID: number }
    return { schema: rows[0]!.schema, pooled: rows[0]!.pid !== processID }
  } catch (err) {
    client.release(true)
    // A pooler may make its own connection to the server only now, and pass on its refusal.
    throw unavailability(err) === null ? err : startFailure(url, err)
  }
}

/**
 * Applies the pending migrations; tells which, by name, and whether a pooler answers for the
 * server: its connections are then not the server's own (no named statements).
 */
export async function preparePostgres(
  opts: PostgresOptions,
): Promise<{ migrated: string[]; pooled: boolean }> {
  // Kysely ends the pool it was given when destroyed: the migration gets its own.
  const pool = newPool(opts, 1)
  const db = new Kysely<unknown>({ dialect: migrationDialect(pool, opts.timeoutMs) })
  try {
    const { schema, pooled } = await probe(pool, opts.url)
    // Kysely looks for its own tables in every schema unless told which one: naming the
    // connection's schema keeps databases with several schemas (per tenant or test) apart.
    const { error, results = [] } = await new Migrator({
      db,
      provider: { getMigrations: async () => postgresMigrations },
      migrationTableSchema: schema,
    }).migrateToLatest()
    // Only a refusal to write is reworded here: Kysely's own errors (a missing migration) are
    // plain Errors, which unavailability cannot tell from a lost connection.
    if (unavailability(error) === 'read-only') {
      throw new Error(
        `${serverOf(opts.url)} is read-only: its schema cannot be migrated (${(error as Error).message})`,
        { cause: error },
      )
    }
    if (error) throw error
    const migrated = results.filter((r) => r.status === 'Success').map((r) => r.migrationName)
    return { migrated, pooled }
  } finally {
    await db.destroy()
  }
}
