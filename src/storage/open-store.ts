import { type Config, ConfigError } from '../config.js'
import { DatabasePathError } from './errors.js'
import type { Store } from './store.js'

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'databasePoolSize' | 'databaseTimeoutMs' | 'idempotencyKeysPerApiKey'
>

/** The SQLite file (or `:memory:`) a `sqlite:` database URL names; null for any other store. */
export function sqlitePathOf(url: string): string | null {
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : null
}

/** Opens (creating and migrating as needed) the store that the database URL names. */
export async function openStore(
  settings: StoreSettings,
  onPoolError?: (err: Error) => void,
): Promise<{ store: Store }> {
  const url = settings.databaseUrl
  // Each adapter and its driver are loaded only when used: loading pg and Kysely would slow every
  // start-up on SQLite (docs/performance.md).
  const sqlitePath = sqlitePathOf(url)
  if (sqlitePath !== null) {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.js')
    const store = await namingTheSetting(url, () =>
      openSqliteStore(sqlitePath, { idempotencyKeysPerApiKey: settings.idempotencyKeysPerApiKey }),
    )
    return { store }
  }
  const options = { ...postgresOptions(settings), onPoolError }
  const { openPostgresStore } = await import('./postgres/postgres-store.js')
  return { store: await openPostgresStore(options) }
}

/** The migrations applied now to the store the database URL names, by name; none when up to date. */
export async function migrateStore(settings: StoreSettings): Promise<string[]> {
  const sqlitePath = sqlitePathOf(settings.databaseUrl)
  if (sqlitePath !== null) {
    const { openMigrated } = await import('./sqlite/open-migrated.js')
    const { db, migrated } = await namingTheSetting(settings.databaseUrl, () =>
      openMigrated(sqlitePath),
    )
    db.close()
    return migrated
  }
  const options = postgresOptions(settings)
  const { preparePostgres } = await import('./postgres/migrate.js')
  return (await preparePostgres(options)).migrated
}

/** The pool's options for a `postgres://` URL; any other scheme is refused. */
function postgresOptions(settings: StoreSettings) {
  const url = settings.databaseUrl
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new Error(`unsupported database URL scheme: ${url.split(':')[0]}`)
  }
  return {
    url,
    poolSize: settings.databasePoolSize,
    timeoutMs: settings.databaseTimeoutMs,
    idempotencyKeysPerApiKey: settings.idempotencyKeysPerApiKey,
  }
}

/** A path that cannot hold the store is a mistake in PETSTORE_DATABASE_URL: said as one. */
async function namingTheSetting<T>(url: string, open: () => Promise<T>): Promise<T> {
  try {
    return await open()
  } catch (err) {
    if (!(err instanceof DatabasePathError)) throw err
    throw new ConfigError([
      `PETSTORE_DATABASE_URL=${JSON.stringify(url)} cannot be used: ${err.message}`,
    ])
  }
}
