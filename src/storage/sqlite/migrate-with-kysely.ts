import type Database from 'better-sqlite3'
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  type MigrationResultSet,
  Migrator,
  SqliteAdapter,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely'
import { SQLITE_MIGRATION_NAMES } from './migration-names.js'
import { sqliteMigrations } from './migrations.js'

/**
 * Kysely's SQLite migrator assumes one process: here the pending migrations run in one transaction
 * that takes the write lock before reading which are applied, so another process waits, then skips.
 */
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }
}

class MigrationSqliteDialect extends SqliteDialect {
  constructor(private readonly config: SqliteDialectConfig) {
    super(config)
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.config)
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalSqliteAdapter()
  }
}

/** Brings the database schema up to date; several processes may do it at once on one file. */
export async function runSqliteMigrations(database: Database.Database): Promise<string[]> {
  const names = Object.keys(sqliteMigrations)
  if (names.join('\n') !== SQLITE_MIGRATION_NAMES.join('\n')) {
    throw new Error(
      `migration-names.ts lists ${SQLITE_MIGRATION_NAMES}, migrations.ts has ${names}`,
    )
  }
  // The dialect closes its database when Kysely is destroyed; the caller keeps using this one.
  const keepOpen = new Proxy(database, {
    get: (target, prop) => {
      if (prop === 'close') return () => target
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  const db = new Kysely<unknown>({ dialect: new MigrationSqliteDialect({ database: keepOpen }) })
  // Off while migrations run, as SQLite's procedure for rebuilding a table wants (002 drops pets,
  // which idempotency_keys refers to); a migration that could break a key checks them itself.
  // Set outside the transaction: inside one, SQLite ignores it.
  const foreignKeys = database.pragma('foreign_keys', { simple: true })
  database.pragma('foreign_keys = OFF')
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
    database.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`)
  }
}
