import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

/** Opens (creating and migrating as needed) the store that a database URL names. */
export async function openStore(databaseUrl: string): Promise<Store> {
  if (databaseUrl.startsWith('sqlite:')) {
    return openSqliteStore(databaseUrl.slice('sqlite:'.length))
  }
  throw new Error(`unsupported database URL scheme: ${databaseUrl.split(':')[0]}`)
}
