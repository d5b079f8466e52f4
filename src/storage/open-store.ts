import type { Config } from '../config.js'
import type { SameTurnReads, Store } from './store.js'

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'databasePoolSize' | 'databaseTimeoutMs' | 'idempotencyKeysPerApiKey'
>

/** The SQLite file (or `:memory:`) a `sqlite:` database URL names; null for any other store. */
export function sqlitePathOf(url: string): string | null {
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : null
}

/** An open store, with its reads in the same turn when its reads never wait (SQLite). */
export interface OpenedStore {
  store: Store
  sameTurnReads?: SameTurnReads
}

/** Opens (creating and migrating as needed) the store that the database URL names. */
export async function openStore(
  settings: StoreSettings,
  onPoolError?: (err: Error) => void,
): Promise<OpenedStore> {
  const url = settings.databaseUrl
  // Each adapter and its driver are loaded only when used: loading pg and Kysely would slow every
  // start-up on SQLite (docs/performance.md).
  const sqlitePath = sqlitePathOf(url)
  if (sqlitePath !== null) {
    const { openSqliteStore } = await import('./sqlite/sqlite-store.js')
    const store = await openSqliteStore(sqlitePath, {
      idempotencyKeysPerApiKey: settings.idempotencyKeysPerApiKey,
    })
    return { store, sameTurnReads: store }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { openPostgresStore } = await import('./postgres/postgres-store.js')
    const store = await openPostgresStore({
      url,
      poolSize: settings.databasePoolSize,
      timeoutMs: settings.databaseTimeoutMs,
      idempotencyKeysPerApiKey: settings.idempotencyKeysPerApiKey,
      ...(onPoolError ? { onPoolError } : {}),
    })
    return { store }
  }
  throw new Error(`unsupported database URL scheme: ${url.split(':')[0]}`)
}
