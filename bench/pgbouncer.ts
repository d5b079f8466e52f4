// PgBouncer for `npm run bench -- --setups pgbouncer`: the tests' own (test/support/pgbouncer.ts),
// in transaction pooling mode on a free port, stopped by the bench's clean-up.
import { execFileSync } from 'node:child_process'
import { startPgBouncer } from '../test/support/pgbouncer.js'
import type { Cleanup } from './cleanup.js'
import { POSTGRES_ADMIN_URL } from './postgres.js'

export interface Bouncer {
  /** `databaseUrl` (a database of the bench's server) reached through PgBouncer. */
  through(databaseUrl: string): string
  /** Its version and settings, for the results. */
  description: string
}

/**
 * Server connections PgBouncer keeps per database: as many as the service's pool holds by default
 * (PETSTORE_DATABASE_POOL_SIZE), so the setup measures the extra hop and the pooling mode, not a
 * smaller pool.
 */
const POOL_SIZE = 10

export async function startBouncer(cleanup: Cleanup): Promise<Bouncer> {
  // Only `after` of a test's context is used: the bench runs what it registers at its clean-up.
  const bouncer = await startPgBouncer(
    { after: (fn: () => unknown) => cleanup.after(fn) },
    { server: POSTGRES_ADMIN_URL, defaultPoolSize: POOL_SIZE },
  )
  const version = execFileSync(process.env.PETSTORE_TEST_PGBOUNCER ?? '/usr/sbin/pgbouncer', [
    '--version',
  ])
    .toString()
    .split('\n', 1)[0]
  return {
    through: (url) => bouncer.through(url),
    description:
      `${version} on port ${bouncer.port}, pool_mode=transaction, default_pool_size=${POOL_SIZE}, ` +
      'not pinned (like PostgreSQL), its CPU time not in CPU µs/req',
  }
}
