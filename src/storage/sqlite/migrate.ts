import type Database from 'better-sqlite3'
import { Kysely, type MigrationResultSet, Migrator, SqliteDialect } from 'kysely'
import { sqliteMigrations } from './migrations.js'

/**
 * Brings the database schema up to date. Kysely's migrator takes a lock table inside a write
 * transaction, so several processes starting at once apply each migration exactly once.
 */
export async function migrateSqlite(database: Database.Database): Promise<string[]> {
  // The dialect closes the database when Kysely is destroyed: give it a handle of its own.
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) })
  try {
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => sqliteMigrations },
    })
    const result: MigrationResultSet = await migrator.migrateToLatest()
    if (result.error) throw result.error
    return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
  } finally {
    await db.destroy()
  }
}
