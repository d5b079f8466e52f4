// Which run of the suite a test belongs to. `npm run test:sqlite` and `npm run test:postgres` run
// the same files, PETSTORE_TEST_STORE naming the store; a test outside these wrappers runs in both.
// A test that is not for this run's store is not registered at all, so the runner reports nothing
// skipped. A file for one store calls them at its top level: scripts/test.ts reads those calls to
// leave it out of the other run (Node 20 would report the empty file as a test of its own).
import { TEST_STORE } from './postgres.js'

export type StoreKind = 'sqlite' | 'postgres'

/** Registers the tests `define` declares only in the run on `store`: that store's own adapter, files, or server. */
export function forStore(store: StoreKind, define: () => void): void {
  if (TEST_STORE === store) define()
}

/**
 * Registers the tests `define` declares once, in the SQLite run: tests whose outcome no store can
 * change (settings, arguments, pure functions, files as shipped, real processes on their default
 * store).
 */
export function storeIndependent(define: () => void): void {
  forStore('sqlite', define)
}
