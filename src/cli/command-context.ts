// What every command that touches the store shares. An invalid setting is a ConfigError, which
// main.ts reports as it does a UsageError.
import { type Config, loadConfig } from '../config.js'
import { openStore } from '../storage/open-store.js'
import type { Store } from '../storage/store.js'

/** A mistake of the operator's: printed alone, and the process exits 2. */
export class UsageError extends Error {}

/** Runs `fn` on the store the settings name, closing it whatever happens. */
export async function withStore<T>(fn: (store: Store, cfg: Config) => Promise<T>): Promise<T> {
  const cfg = loadConfig()
  const { store } = await openStore(cfg)
  try {
    return await fn(store, cfg)
  } finally {
    await store.close()
  }
}
