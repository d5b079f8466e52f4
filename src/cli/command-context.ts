// What the commands share. An invalid setting is a ConfigError, which main.ts reports as it does
// a UsageError.
import { InvalidArgumentError } from 'commander'
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

/** A command-line value parser of whole numbers from 1 to `max`, written without a leading zero. */
export function wholeNumberArg(max: number): (text: string) => number {
  return (text) => {
    const n = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : Number.NaN
    if (!(n <= max)) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`)
    return n
  }
}
