// Statements and transactions on pooled connections, with their failures classified
// (unavailability.ts) and broken connections kept out of the pool. Nothing outlives a transaction
// on the server but named statements, and those only on a direct connection: behind a pooler in
// transaction mode each transaction may run on another server connection.
import type pg from 'pg'
import { type Deadline, remainingMs } from '../deadline.js'
import type { StorageUnavailableError } from '../errors.js'
import { unavailableIfCannotServe, unavailableToConnect } from './unavailability.js'

export interface StatementOptions {
  /** Bound on each statement of a transaction, and on its idle time, set by the server. */
  timeoutMs: number
  /** Named statements, parsed and planned once per connection; off behind a pooler. */
  prepared: boolean
}

/** A whole number of milliseconds above 0, which PostgreSQL would read as no bound at all. */
export const serverMilliseconds = (ms: number): number => Math.max(1, Math.ceil(ms))

/**
 * `BEGIN` with the transaction's bounds, which end with it, for one round trip. A client lost to a
 * partition would keep its transaction's locks until TCP noticed, which can take hours: the idle
 * bound has the server end such a transaction instead.
 */
export function beginBounded(timeoutMs: number): string {
  const ms = serverMilliseconds(timeoutMs)
  return `BEGIN; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms}`
}

/** The statements of one transaction, each bounded by what is left of the deadline. */
export interface Transaction {
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>
}

export class PooledStatements {
  private readonly begin: string

  constructor(
    readonly pool: pg.Pool,
    private readonly opts: StatementOptions,
  ) {
    this.begin = beginBounded(opts.timeoutMs)
  }

  get timeoutMs(): number {
    return this.opts.timeoutMs
  }

  /** A statement, named (so prepared once per connection) where connections are the server's own. */
  statement(name: string, text: string, values: unknown[]): pg.QueryConfig {
    return this.opts.prepared ? { name, text, values } : { text, values }
  }

  /** Milliseconds a wait may take now, at most the timeout; unavailability once none are left. */
  budget(deadline: Deadline | undefined): number {
    const ms = remainingMs(deadline, this.opts.timeoutMs)
    if (ms <= 0) throw outOfTime()
    return ms
  }

  /**
   * A pooled connection within `ms`; any failure to get one is unavailability. The pool's own
   * bound is the whole timeout, so a shorter wait races it, only when no idle connection is there.
   */
  private async connect(ms: number): Promise<pg.PoolClient> {
    const promptly = ms >= this.opts.timeoutMs || this.pool.idleCount > 0
    const connecting = this.pool.connect()
    try {
      if (promptly) return await connecting
      return await withinMs(connecting, ms, (late) => late.release())
    } catch (err) {
      throw unavailableToConnect(err)
    }
  }

  /**
   * `config` bounded by the time left (pg's own per-query bound), set on it: every config here is
   * made for one call, so no copy per statement is needed.
   */
  private bounded(config: pg.QueryConfig, deadline: Deadline | undefined): pg.QueryConfig {
    if (deadline !== undefined)
      (config as { query_timeout?: number }).query_timeout = this.budget(deadline)
    return config
  }

  /** One statement on a pooled connection (pool.query, with connect's classification). */
  async run<R extends pg.QueryResultRow>(
    config: pg.QueryConfig,
    deadline?: Deadline,
  ): Promise<pg.QueryResult<R>> {
    const client = await this.connect(this.budget(deadline))
    try {
      const result = await client.query<R>(this.bounded(config, deadline))
      client.release()
      return result
    } catch (err) {
      // As pool.query does: a connection whose statement failed is not reused. One that refused a
      // write (a primary demoted behind a proxy) would refuse every later one too.
      client.release(err as Error)
      throw unavailableIfCannotServe(err)
    }
  }

  /** The rows of one statement (see `statement`). */
  async query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
    deadline?: Deadline,
  ): Promise<R[]> {
    return (await this.run<R>(this.statement(name, text, values), deadline)).rows
  }

  async transaction<T>(work: (tx: Transaction) => Promise<T>, deadline?: Deadline): Promise<T> {
    const client = await this.connect(this.budget(deadline))
    const tx: Transaction = { query: (config) => client.query(this.bounded(config, deadline)) }
    try {
      const ms = this.budget(deadline)
      await client.query(
        this.bounded({ text: ms >= this.opts.timeoutMs ? this.begin : beginBounded(ms) }, deadline),
      )
      const result = await work(tx)
      await tx.query({ text: 'COMMIT' })
      client.release()
      return result
    } catch (err) {
      // Closing the connection ends the transaction on the server: no ROLLBACK to wait for, which
      // a server that stopped answering would make take another timeout.
      client.release(true)
      throw unavailableIfCannotServe(err)
    }
  }
}

/** The statements that were not answered in time: the same answer as an unreachable server. */
function outOfTime(): StorageUnavailableError {
  return unavailableToConnect(new Error("the request's database deadline passed"))
}

/** `promise`, or a rejection after `ms`; a value that comes too late goes to `late`. */
function withinMs<T>(promise: Promise<T>, ms: number, late: (value: T) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      reject(new Error(`no connection within ${Math.ceil(ms)} ms`))
    }, ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        if (timedOut) late(value)
        else resolve(value)
      },
      (err) => {
        clearTimeout(timer)
        reject(err)
      },
    )
  })
}
