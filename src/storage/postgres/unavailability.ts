// Which failures of PostgreSQL, or of the line to it, mean that the database cannot serve now (503
// with Retry-After for the caller, who may retry) rather than a bug (500): decided here alone.
import pg from 'pg'
import { StorageUnavailableError } from '../errors.js'

/** Why the database cannot serve: it refuses writes, or it cannot be used at all right now. */
export type Unavailability = 'read-only' | 'unreachable'

/**
 * SQLSTATE classes of a server that cannot serve now: 08 connection, 28 authorization, 3D no such
 * database, 53 resources, 57 operator intervention (shutdown, statement timeout), 58 server I/O.
 */
const UNAVAILABLE_CLASSES = ['08', '28', '3D', '53', '57', '58']

/**
 * Transient failures of one transaction, which a retry may well pass: 25P03 idle in transaction
 * too long, 40001 serialization failure (also a standby's conflict with recovery), 40P01 deadlock,
 * 55P03 a lock waited for too long (insert_pets's bound).
 */
const UNAVAILABLE_STATES = ['25P03', '40001', '40P01', '55P03']

/** What a bug raises; the driver's and the socket's own failures are plain (or system) Errors. */
const BUG_TYPES = [TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError]

/** The driver's plain Errors that report a misuse of it, a bug, rather than a lost connection. */
const DRIVER_MISUSE = [
  'Prepared statements must be unique',
  'Query values must be an array',
  'A query must have either text or a name',
  'Client has already been connected',
  'Release called on client which has already been released',
]

/**
 * Why `err` means the database cannot serve now; null when it is a bug (or a plain refusal).
 * 25006 is a hot standby, a demoted primary, or default_transaction_read_only: the service never
 * asks for a read-only transaction, so it is always the server's state.
 */
export function unavailability(err: unknown): Unavailability | null {
  if (err instanceof pg.DatabaseError) {
    const state = err.code ?? ''
    if (state === '25006') return 'read-only'
    const unavailable =
      UNAVAILABLE_CLASSES.includes(state.slice(0, 2)) || UNAVAILABLE_STATES.includes(state)
    return unavailable ? 'unreachable' : null
  }
  if (!(err instanceof Error) || BUG_TYPES.some((type) => err instanceof type)) return null
  return DRIVER_MISUSE.some((prefix) => err.message.startsWith(prefix)) ? null : 'unreachable'
}

/** Fixed messages, never the server's. */
const MESSAGES: Record<Unavailability, string> = {
  'read-only': 'the database is read-only; retry later',
  unreachable: 'the database is not reachable; retry later',
}

const unavailable = (why: Unavailability, cause: unknown) =>
  new StorageUnavailableError(MESSAGES[why], 1, { cause })

/**
 * The failure to get a connection: unavailability whatever it was, since a database that does not
 * accept connections now answers 55000, which on an open connection would mean a bug.
 */
export const unavailableToConnect = (err: unknown): StorageUnavailableError =>
  unavailable('unreachable', err)

/** A StorageUnavailableError for such an `err`; any other error as it was. */
export function unavailableIfCannotServe(err: unknown): unknown {
  if (err instanceof StorageUnavailableError) return err
  const why = unavailability(err)
  return why === null ? err : unavailable(why, err)
}
