// Brings a PostgreSQL database's schema up to date before a store opens on it, and tells whether
// a pooler stands between the service and the server.
import { Kysely, Migrator } from 'kysely'
import pg from 'pg'
import { MigrationDialect } from './migration-dialect.js'
import { postgresMigrations } from './migrations.js'
import { type PostgresOptions, poolConfig, survivingLostConnections } from './pool.js'
import { serverOf, startFailure } from './start-failure.js'
import { beginBounded } from './statements.js'
import { unavailability } from './unavailability.js'

export interface PreparedDatabase {
  /** The migrations applied now, by name. */
  migrated: string[]
  /** A pooler answers for the server: connections are not the server's own (no named statements). */
  pooled: boolean
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

/** Applies the pending migrations; tells whether the connections go through a pooler. */
export async function preparePostgres(opts: PostgresOptions): Promise<PreparedDatabase> {
  // Kysely ends the pool it was given when destroyed: the migration gets its own.
  const pool = survivingLostConnections(new pg.Pool(poolConfig(opts, 1)))
  pool.on('error', () => undefined)
  const db = new Kysely<unknown>({
    dialect: new MigrationDialect({ pool }, beginBounded(opts.timeoutMs)),
  })
  try {
    const { schema, pooled } = await probe(pool, opts.url)
    // Kysely looks for its own tables in every schema unless told which one: naming the
    // connection's schema keeps databases with several schemas (per tenant or test) apart.
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => postgresMigrations },
      migrationTableSchema: schema,
    })
    const result = await migrator.migrateToLatest()
    // Only a refusal to write is reworded here: Kysely's own errors (a missing migration) are
    // plain Errors, which unavailability cannot tell from a lost connection.
    if (unavailability(result.error) === 'read-only') {
      throw new Error(
        `${serverOf(opts.url)} is read-only: its schema cannot be migrated (${(result.error as Error).message})`,
        { cause: result.error },
      )
    }
    if (result.error) throw result.error
    const migrated = (result.results ?? [])
      .filter((r) => r.status === 'Success')
      .map((r) => r.migrationName)
    return { migrated, pooled }
  } finally {
    await db.destroy()
  }
}

/** Applies the pending migrations and returns their names. */
export async function migratePostgres(opts: PostgresOptions): Promise<string[]> {
  return (await preparePostgres(opts)).migrated
}
