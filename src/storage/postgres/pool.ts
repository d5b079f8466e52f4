// The pool every PostgreSQL connection comes from, and the statements and transactions run on it:
// each bounded by what is left of the request's deadline (deadline.ts), its failures classified
// (unavailability.ts), broken connections kept out of the pool. Nothing outlives a transaction on
// the server but named statements, and those only on a direct connection: behind a pooler in
// transaction mode each transaction may run on another server connection.
import pg from 'pg'
import { type Deadline, remainingMs } from '../deadline.js'
import { unavailableIfCannotServe, unavailableToConnect } from './unavailability.js'

export interface PostgresOptions {
  url: string
  poolSize: number
  /** Bound on connecting and on each statement: past it, the request fails with 503. */
  timeoutMs: number
  onPoolError?: (err: Error) => void
  /** Idempotency records kept per API key (IdempotencyCap). */
  idempotencyKeysPerApiKey?: number
}

const INT8_AS_BIGINT = new pg.TypeOverrides()
INT8_AS_BIGINT.setTypeParser(pg.types.builtins.INT8, BigInt)

/**
 * A pool of `max` connections, reading int8 as bigint. The only server-side bounds are set per
 * transaction (beginBounded) and per lock wait (insert_pets), not pg's statement_timeout and the
 * like: those are startup parameters, which a pooler such as PgBouncer refuses, and a session's
 * settings would be carried over to other clients' transactions.
 */
export function newPool(
  opts: PostgresOptions,
  max: number,
  onError: (err: Error) => void = () => undefined,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max,
    connectionTimeoutMillis: opts.timeoutMs,
    query_timeout: opts.timeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    types: INT8_AS_BIGINT,
  })
  // A lost connection emits an error, which ends the process unless someone listens: the pool
  // listens (and reports here) while a client is idle, the client's own listener while it is out.
  pool.on('error', onError)
  pool.on('connect', (client) => client.on('error', () => undefined))
  return pool
}

/** A whole number of milliseconds above 0, which PostgreSQL would read as no bound at all. */
export const serverMilliseconds = (ms: number): number => Math.max(1, Math.ceil(ms))

/**
 * `BEGIN` with the transaction's bounds, which end with it, in one round trip. A client lost to a
 * partition would keep its transaction's locks until TCP noticed, which can take hours: the idle
 * bound has the server end such a transaction instead.
 */
export function beginBounded(timeoutMs: number): string {
  const ms = serverMilliseconds(timeoutMs)
  return `BEGIN; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms}`
}

/** Statements of one transaction; named as in Statements.query. */
export type Query = <R extends pg.QueryResultRow>(
  name: string,
  text: string,
  values: unknown[],
) => Promise<pg.QueryResult<R>>

export class Statements {
  constructor(
    readonly pool: pg.Pool,
    readonly timeoutMs: number,
    /** Statements keep their names (off behind a pooler). */
    private readonly named: boolean,
  ) {}

  /** Milliseconds a wait may take now, at most the timeout; unavailability once none are left. */
  budget(deadline: Deadline | undefined): number {
    const ms = remainingMs(deadline, this.timeoutMs)
    if (ms <= 0) throw unavailableToConnect(new Error("the request's database deadline passed"))
    return ms
  }

  /** One statement on a pooled connection; `name` is its name on a direct connection. */
  query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
    deadline?: Deadline,
  ): Promise<pg.QueryResult<R>> {
    return this.using(deadline, (query) => query<R>(name, text, values))
  }

  transaction<T>(work: (query: Query) => Promise<T>, deadline?: Deadline): Promise<T> {
    return this.using(deadline, async (query) => {
      await query('', beginBounded(this.budget(deadline)), [])
      const result = await work(query)
      await query('', 'COMMIT', [])
      return result
    })
  }

  /**
   * `work` on a pooled connection, each statement bounded by the time left (pg's query_timeout).
   * A statement with no name, or behind a pooler, goes unnamed: parsed each time, and with no
   * values as a simple query, which may hold several statements.
   */
  private async using<T>(deadline: Deadline | undefined, work: (q: Query) => Promise<T>) {
    const client = await this.connect(deadline)
    try {
      const result = await work((name, text, values) => {
        const bound = deadline === undefined ? {} : { query_timeout: this.budget(deadline) }
        const named = this.named && name !== '' ? { name } : {}
        return client.query({ ...named, text, values, ...bound } as pg.QueryConfig)
      })
      client.release()
      return result
    } catch (err) {
      // Closed, not reused, as pool.query does: a connection that refused a write (a primary
      // demoted behind a proxy) would refuse every later one too. Closing ends its transaction
      // with no ROLLBACK, which a server that stopped answering would hold up for another timeout.
      client.release(true)
      throw unavailableIfCannotServe(err)
    }
  }

  /**
   * A pooled connection within the time left; any failure to get one is unavailability. The
   * pool's own bound is the whole timeout, so a shorter wait races it, unless a connection is idle.
   */
  private async connect(deadline: Deadline | undefined): Promise<pg.PoolClient> {
    const ms = this.budget(deadline)
    const promptly = ms >= this.timeoutMs || this.pool.idleCount > 0
    const connecting = this.pool.connect()
    let timer: NodeJS.Timeout | undefined
    const tooLate = new Promise<never>((_, reject) => {
      if (promptly) return
      timer = setTimeout(() => reject(new Error(`no connection within ${Math.ceil(ms)} ms`)), ms)
    })
    try {
      return await Promise.race([connecting, tooLate])
    } catch (err) {
      // A connection that comes too late goes back to the pool.
      connecting.then(
        (client) => client.release(),
        () => undefined,
      )
      throw unavailableToConnect(err)
    } finally {
      clearTimeout(timer)
    }
  }
}
