import type { Config } from '../config.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

export type StoreSettings = Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'databaseTimeoutMs'>

/** Opens (creating and migrating as needed) the store that the database URL names. */
export async function openStore(
  settings: StoreSettings,
  onPoolError?: (err: Error) => void,
): Promise<Store> {
  const url = settings.databaseUrl
  if (url.startsWith('sqlite:')) return openSqliteStore(url.slice('sqlite:'.length))
  if (/^postgres(ql)?:\/\//.test(url)) {
    return openPostgresStore({
      url,
      poolSize: settings.databasePoolSize,
      timeoutMs: settings.databaseTimeoutMs,
      ...(onPoolError ? { onPoolError } : {}),
    })
  }
  throw new Error(`unsupported database URL scheme: ${url.split(':')[0]}`)
}
