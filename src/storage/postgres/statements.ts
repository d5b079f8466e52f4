// Statements and transactions on pooled connections, with their failures classified
// (unavailability.ts) and broken connections kept out of the pool. Nothing outlives a transaction
// on the server but named statements, and those only on a direct connection: behind a pooler in
// transaction mode each transaction may run on another server connection.
import type pg from 'pg'
import { unavailableOr, unavailableToConnect } from './unavailability.js'

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

  /** A pooled connection; any failure to get one is unavailability (unavailableToConnect). */
  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect()
    } catch (err) {
      throw unavailableToConnect(err)
    }
  }

  /** One statement on a pooled connection (pool.query, with connect's classification). */
  async run<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const client = await this.connect()
    try {
      const result = await client.query<R>(config)
      client.release()
      return result
    } catch (err) {
      // As pool.query does: a connection whose statement failed is not reused. One that refused a
      // write (a primary demoted behind a proxy) would refuse every later one too.
      client.release(err as Error)
      throw unavailableOr(err)
    }
  }

  /** The rows of one statement (see `statement`). */
  async query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    return (await this.run<R>(this.statement(name, text, values))).rows
  }

  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect()
    try {
      await client.query(this.begin)
      const result = await work(client)
      await client.query('COMMIT')
      client.release()
      return result
    } catch (err) {
      // A client that failed mid-transaction may be broken: destroy it rather than reuse it.
      await client.query('ROLLBACK').catch(() => undefined)
      client.release(true)
      throw unavailableOr(err)
    }
  }
}
