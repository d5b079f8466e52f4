// Which PostgreSQL failures are the database's state (503 for the caller) and which are bugs
// (500): first over a table of SQLSTATEs and the driver's messages, then on errors a real server
// raises.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import pg from 'pg'
import { StorageUnavailableError } from '../../../src/storage/errors.js'
import {
  type Unavailability,
  unavailability,
  unavailableIfCannotServe,
  unavailableToConnect,
} from '../../../src/storage/postgres/unavailability.js'
import { DB_READ_ONLY, DB_UNREACHABLE } from '../../support/errors.js'
import { freshPostgresUrl } from '../../support/postgres.js'
import { forStore } from '../../support/stores.js'

/** An error as the server sends it: a DatabaseError with its SQLSTATE. */
function serverError(code: string, message: string): pg.DatabaseError {
  const err = new pg.DatabaseError(message, message.length, 'error')
  err.code = code
  return err
}

/** A system error of the socket, as Node raises it. */
function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' })
}

/** Errors as the server sends them (SQLSTATE, message), and what each means. */
const SERVER_ERRORS: [code: string, message: string, expected: Unavailability | null][] = [
  // Refusing writes: a hot standby, a demoted primary, default_transaction_read_only.
  ['25006', 'cannot execute INSERT in a read-only transaction', 'read-only'],
  ['25006', 'cannot execute nextval() in a read-only transaction', 'read-only'],
  ['25006', 'cannot execute SELECT FOR UPDATE in a read-only transaction', 'read-only'],
  ['25006', 'cannot execute CREATE TABLE in a read-only transaction', 'read-only'],
  ['25006', 'cannot execute LISTEN during recovery', 'read-only'],
  // Operator intervention: failover, restart, crash, recovery.
  ['57P01', 'terminating connection due to administrator command', 'unreachable'],
  ['57P02', 'terminating connection because of crash of another server process', 'unreachable'],
  ['57P03', 'the database system is starting up', 'unreachable'],
  ['57P03', 'the database system is in recovery mode', 'unreachable'],
  ['57P03', 'the database system is shutting down', 'unreachable'],
  ['57P03', 'the database system is not accepting connections', 'unreachable'],
  ['57P04', 'terminating connection due to conflict with recovery', 'unreachable'],
  ['57P05', 'terminating connection due to idle-session timeout', 'unreachable'],
  ['57014', 'canceling statement due to statement timeout', 'unreachable'],
  // A hot standby cancelling a query that conflicts with the WAL it replays.
  ['40001', 'canceling statement due to conflict with recovery', 'unreachable'],
  ['40P01', 'deadlock detected', 'unreachable'],
  // insert_pets's bound on its wait for a lock (migration 004).
  ['55P03', 'canceling statement due to lock timeout', 'unreachable'],
  ['25P03', 'terminating connection due to idle-in-transaction timeout', 'unreachable'],
  // Connection exceptions, the server's or a pooler's in front of it.
  ['08006', 'connection failure', 'unreachable'],
  ['08001', 'could not connect to server', 'unreachable'],
  ['08P01', 'server conn crashed?', 'unreachable'],
  ['08P01', 'query_wait_timeout', 'unreachable'],
  ['28P01', 'password authentication failed for user "petstore"', 'unreachable'],
  ['3D000', 'database "petstore" does not exist', 'unreachable'],
  ['53300', 'sorry, too many clients already', 'unreachable'],
  ['53100', 'could not extend file: No space left on device', 'unreachable'],
  ['58030', 'could not write to file', 'unreachable'],
  // Bugs: the server refusing a statement.
  ['23505', 'duplicate key value violates unique constraint "pets_pkey"', null],
  ['23503', 'insert or update violates foreign key constraint', null],
  ['42P01', 'relation "pets" does not exist', null],
  ['42883', 'function insert_pets(text[]) does not exist', null],
  ['22P02', 'invalid input syntax for type bigint: "x"', null],
  ['25001', 'there is already a transaction in progress', null],
  ['55000', 'object not in prerequisite state', null],
  ['XX000', 'cache lookup failed', null],
]

const TABLE: (readonly [what: unknown, expected: Unavailability | null])[] = [
  ...SERVER_ERRORS.map(
    ([code, message, expected]) => [serverError(code, message), expected] as const,
  ),
  // The driver's and the socket's own: the connection lost or never made.
  [new Error('Connection terminated unexpectedly'), 'unreachable'],
  [new Error('Connection terminated'), 'unreachable'],
  [new Error('Connection terminated due to connection timeout'), 'unreachable'],
  [new Error('timeout exceeded when trying to connect'), 'unreachable'],
  [new Error('Query read timeout'), 'unreachable'],
  [new Error('Client has encountered a connection error and is not queryable'), 'unreachable'],
  [socketError('ECONNREFUSED'), 'unreachable'],
  [socketError('ECONNRESET'), 'unreachable'],
  [socketError('ETIMEDOUT'), 'unreachable'],
  [socketError('ENOTFOUND'), 'unreachable'],
  // Bugs: the driver misused, the service's own code.
  [
    new Error("Prepared statements must be unique - 'get-pet' was used for a different statement"),
    null,
  ],
  [new Error('Query values must be an array'), null],
  [new TypeError("Cannot read properties of undefined (reading 'id')"), null],
  [new RangeError('Invalid array length'), null],
  ['not an Error', null],
  [undefined, null],
]

forStore('postgres', () => {
  describe('unavailability: a table of failures', () => {
    for (const [err, expected] of TABLE) {
      const code = err instanceof pg.DatabaseError ? `SQLSTATE ${err.code}: ` : ''
      const shown =
        err instanceof Error ? `${err.constructor.name} ${code}${err.message}` : String(err)
      test(`${shown} → ${expected ?? 'a bug'}`, () => {
        assert.equal(unavailability(err), expected)
        const converted = unavailableIfCannotServe(err)
        if (expected === null) {
          assert.equal(converted, err)
          return
        }
        assert.ok(converted instanceof StorageUnavailableError)
        const message = expected === 'read-only' ? DB_READ_ONLY.message : DB_UNREACHABLE.message
        assert.equal(converted.message, message)
        assert.equal(converted.retryAfterSeconds, 1)
        assert.equal(converted.cause, err)
      })
    }

    test('an error already converted stays as it was', () => {
      const converted = unavailableIfCannotServe(serverError('25006', 'cannot execute INSERT'))
      assert.equal(unavailableIfCannotServe(converted), converted)
    })

    test('any failure to connect is unavailability, whatever its SQLSTATE', () => {
      const refused = serverError(
        '55000',
        'database "petstore" is not currently accepting connections',
      )
      assert.equal(unavailability(refused), null)
      const converted = unavailableToConnect(refused)
      assert.equal(converted.message, DB_UNREACHABLE.message)
      assert.equal(converted.cause, refused)
    })
  })

  describe('unavailability: errors a real PostgreSQL raises', () => {
    /** The error `statements` end with, on a connection of their own to a fresh schema. */
    async function failureOf(t: TestContext, statements: string[]): Promise<unknown> {
      const client = new pg.Client({ connectionString: await freshPostgresUrl(t) })
      client.on('error', () => undefined)
      await client.connect()
      t.after(() => client.end().catch(() => undefined))
      try {
        for (const statement of statements) await client.query(statement)
      } catch (err) {
        return err
      }
      assert.fail(`no failure from ${statements.join('; ')}`)
    }

    const cases: [what: string, statements: string[], expected: Unavailability | null][] = [
      [
        'a write in a session whose transactions are read-only (25006)',
        [
          'CREATE TABLE t (n int)',
          'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY',
          'INSERT INTO t VALUES (1)',
        ],
        'read-only',
      ],
      [
        'a write under default_transaction_read_only (25006)',
        ['CREATE TABLE t (n int)', 'SET default_transaction_read_only = on', 'DELETE FROM t'],
        'read-only',
      ],
      [
        'the session ended by an administrator (57P01)',
        ['SELECT pg_terminate_backend(pg_backend_pid())'],
        'unreachable',
      ],
      [
        'a statement timeout (57014)',
        ['SET statement_timeout = 1', 'SELECT pg_sleep(1)'],
        'unreachable',
      ],
      [
        'a unique violation (23505)',
        ['CREATE TABLE t (n int PRIMARY KEY)', 'INSERT INTO t VALUES (1), (1)'],
        null,
      ],
      ['an unknown table (42P01)', ['SELECT * FROM no_such_table'], null],
      ['a division by zero (22012)', ['SELECT 1 / 0'], null],
    ]
    for (const [what, statements, expected] of cases) {
      test(`${what} → ${expected ?? 'a bug'}`, async (t) => {
        const err = await failureOf(t, statements)
        assert.ok(err instanceof pg.DatabaseError, String(err))
        assert.equal(err.code, /\((\w{5})\)$/.exec(what)![1])
        assert.equal(unavailability(err), expected)
      })
    }

    test('a connection to a database that does not exist (3D000) → unreachable', async (t) => {
      const url = new URL(await freshPostgresUrl(t))
      url.pathname = '/petstore_no_such_database'
      const client = new pg.Client({ connectionString: url.toString() })
      const err = await client.connect().then(
        () => assert.fail('connected'),
        (e: unknown) => e,
      )
      assert.equal((err as pg.DatabaseError).code, '3D000')
      assert.equal(unavailability(err), 'unreachable')
    })
  })
})
