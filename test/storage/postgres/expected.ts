// What the PostgreSQL tests expect: the store's migrations, and the service's answer while the
// database cannot serve.
import assert from 'node:assert/strict'
import type { Reply } from '../../support/api.js'
import { DB_UNREACHABLE } from '../../support/errors.js'

/** Every migration of the PostgreSQL store, by name, in the order applied. */
export const MIGRATIONS = [
  '001-initial',
  '002-data-version',
  '003-insert-pets',
  '004-insert-pets-lock-wait',
  '005-idempotency-claim-token',
]

/** A 503 with exactly `body` (the database not reachable unless given) and Retry-After. */
export function assertUnavailableReply(reply: Reply, what: string, body = DB_UNREACHABLE) {
  assert.equal(reply.status, 503, `${what}: ${reply.body}`)
  assert.deepEqual(JSON.parse(reply.body), body, what)
  assert.equal(reply.headers['retry-after'], '1', what)
  assert.equal(reply.headers['content-type'], 'application/json; charset=utf-8', what)
}
