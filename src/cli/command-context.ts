// What every command that touches the settings or the store shares.
import { type Config, ConfigError, loadConfig } from '../config.js'
import { openStore } from '../storage/open-store.js'
import type { Store } from '../storage/store.js'

/** A mistake of the operator's: printed alone, and the process exits 2. */
export class UsageError extends Error {}

/** The settings; an invalid one is a usage error. */
export function commandConfig(): Config {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
}

/** Runs `fn` on an open store, closing it whatever happens. */
export async function withStore<T>(cfg: Config, fn: (store: Store) => Promise<T>): Promise<T> {
  const { store } = await openStore(cfg)
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
