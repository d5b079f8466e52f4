// Throwaway PostgreSQL databases named `<prefix><pid>_<random>`, for the tests and the bench: made
// through an administrator's connection, and those left by processes that no longer run dropped.
import { randomBytes } from 'node:crypto'
import pg from 'pg'

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export class ScratchDatabases {
  constructor(
    /** A role that may CREATE DATABASE, on any database of the server. */
    readonly adminUrl: string,
    private readonly prefix: string,
    /** What to do about it, said when the server cannot be reached. */
    private readonly advice: string,
  ) {}

  /** Runs `work` on a connection to `url` (the administrator's unless given), then closes it. */
  async connected<T>(work: (client: pg.Client) => Promise<T>, url = this.adminUrl): Promise<T> {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
    try {
      await client.connect()
    } catch (err) {
      throw new Error(
        `PostgreSQL is not reachable at ${url} (${(err as Error).message}); ${this.advice}`,
      )
    }
    try {
      return await work(client)
    } finally {
      await client.end()
    }
  }

  /** A new, empty database; those left by processes that no longer run are dropped first. */
  create(): Promise<{ name: string; url: string }> {
    return this.connected(async (c) => {
      const { rows } = await c.query<{ datname: string }>(
        'SELECT datname FROM pg_database WHERE datname LIKE $1',
        [`${this.prefix}%`],
      )
      for (const { datname } of rows) {
        const pid = Number(datname.slice(this.prefix.length).split('_')[0])
        if (!isRunning(pid)) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)
      }
      const name = `${this.prefix}${process.pid}_${randomBytes(4).toString('hex')}`
      await c.query(`CREATE DATABASE ${name}`)
      const url = new URL(this.adminUrl)
      url.pathname = `/${name}`
      return { name, url: url.toString() }
    })
  }

  /** Drops the database even while something is still connected to it. */
  drop(name: string): Promise<void> {
    return this.connected(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    })
  }
}
