// Statements and transactions on pooled connections, with their failures classified
// (unavailability.ts) and broken connections kept out of the pool.
import type pg from 'pg'
import { unavailableOr, unavailableToConnect } from './unavailability.js'

export class PooledStatements {
  constructor(readonly pool: pg.Pool) {}

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

  /** The rows of one named (so prepared once per connection) statement. */
  async query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    return (await this.run<R>({ name, text, values })).rows
  }

  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect()
    try {
      await client.query('BEGIN')
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
