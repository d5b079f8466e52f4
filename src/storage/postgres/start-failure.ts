// Why a start could not use the database, said plainly: no answer at all, a refusal, or a
// database that is not there.
import pg from 'pg'
import { unavailability } from './unavailability.js'

/** 3D000, or PgBouncer's word for it: it passes the server's message on under 08P01. */
const MISSING_DATABASE = /^database "(.+)" does not exist$/

function isMissingDatabase(err: unknown): boolean {
  return (
    err instanceof pg.DatabaseError && (err.code === '3D000' || MISSING_DATABASE.test(err.message))
  )
}

/** The server named by `url`, as an operator would look for it. */
export function serverOf(url: string): string {
  const { hostname, port } = new URL(url)
  return `PostgreSQL at ${hostname}:${port || 5432}`
}

/** The database `url` names, or, where it names none, the one the server reported. */
function databaseOf(url: string, err: pg.DatabaseError): string {
  const named = decodeURIComponent(new URL(url).pathname.slice(1))
  return named || (MISSING_DATABASE.exec(err.message)?.[1] ?? '')
}

/**
 * The failure to make the first connection of a start, worded for the operator; an error that is
 * neither a server's answer nor a lost line (a bug) is returned as it was.
 */
export function startFailure(url: string, err: unknown): unknown {
  const server = serverOf(url)
  if (err instanceof pg.DatabaseError) {
    if (isMissingDatabase(err)) {
      const name = databaseOf(url, err)
      return new Error(
        `${server} has no database "${name}" (create it with createdb ${name}, or fix PETSTORE_DATABASE_URL)`,
        { cause: err },
      )
    }
    return new Error(`${server} refused the connection: ${err.message}`, { cause: err })
  }
  if (unavailability(err) === null) return err
  return new Error(`${server} is not reachable (${(err as Error).message})`, { cause: err })
}
