// Brings a PostgreSQL database's schema up to date before a store opens on it.
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { postgresMigrations } from './migrations.js'
import { type PostgresOptions, poolConfig, survivingLostConnections } from './pool.js'
import { unavailability } from './unavailability.js'

/** Said plainly, so that a start failing because of the database's state says so. */
function stateOfDatabase(opts: PostgresOptions, state: string, err: unknown): Error {
  const { hostname, port } = new URL(opts.url)
  return new Error(
    `PostgreSQL at ${hostname}:${port || 5432} ${state} (${(err as Error).message})`,
    { cause: err },
  )
}

/** Applies the pending migrations and returns their names. */
export async function migratePostgres(opts: PostgresOptions): Promise<string[]> {
  // Kysely ends the pool it was given when destroyed: the migration gets its own.
  const pool = survivingLostConnections(new pg.Pool(poolConfig(opts, 1)))
  pool.on('error', () => undefined)
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) })
  try {
    // Kysely looks for its own tables in every schema unless told which one: naming the
    // connection's schema keeps databases with several schemas (per tenant or test) apart.
    const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`
      .execute(db)
      .catch((err: unknown) => {
        throw unavailability(err) === null ? err : stateOfDatabase(opts, 'is not reachable', err)
      })
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => postgresMigrations },
      migrationTableSchema: rows[0]!.schema,
    })
    const result = await migrator.migrateToLatest()
    // Only a refusal to write is reworded here: Kysely's own errors (a missing migration) are
    // plain Errors, which unavailability cannot tell from a lost connection.
    if (unavailability(result.error) === 'read-only') {
      throw stateOfDatabase(opts, 'is read-only: its schema cannot be migrated', result.error)
    }
    if (result.error) throw result.error
    return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
  } finally {
    await db.destroy()
  }
}
