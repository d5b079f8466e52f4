// The PostgreSQL connection pool as every pool of the service is configured.
import pg from 'pg'

export interface PostgresOptions {
  url: string
  poolSize: number
  /** Bound on connecting and on each statement: past it, the request fails with 503. */
  timeoutMs: number
  onPoolError?: (err: Error) => void
  /** Idempotency records kept per API key (IdempotencyCap). */
  idempotencyKeysPerApiKey?: number
}

const INT8_OID = 20
const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format)) as never,
}

export function poolConfig(opts: PostgresOptions, max: number): pg.PoolConfig {
  return {
    connectionString: opts.url,
    max,
    connectionTimeoutMillis: opts.timeoutMs,
    // The only server-side bounds are set per transaction (statements.ts) and per lock wait
    // (insert_pets): a pooler such as PgBouncer refuses any startup parameter but the basic ones,
    // and would carry a session's settings over to other clients' transactions.
    query_timeout: opts.timeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    types: typeParsers,
  }
}

/**
 * A lost connection also emits an error event, which ends the process unless someone listens; the
 * pool listens only to idle clients, so each client gets its own listener for while it is out.
 */
export function survivingLostConnections(pool: pg.Pool): pg.Pool {
  pool.on('connect', (client) => client.on('error', () => undefined))
  return pool
}
