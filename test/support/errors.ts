// The service's Error bodies as the tests expect them, whole: `{ code, message, status }`.
import assert from 'node:assert/strict'

export interface ErrorBody {
  code: string
  message: string
  status: number
}

export const errorBody = (status: number, code: string, message: string): ErrorBody => ({
  code,
  message,
  status,
})

export const badRequest = (message: string) => errorBody(400, 'invalid_request', message)

export const unavailable = (message: string) => errorBody(503, 'service_unavailable', message)

/** No Authorization header, or not a Bearer one. */
export const NO_KEY = errorBody(
  401,
  'unauthorized',
  'an API key is required: send Authorization: Bearer <key>',
)

/** A Bearer key that is unknown, revoked or expired. */
export const INVALID_TOKEN = errorBody(
  401,
  'unauthorized',
  'the API key is not valid (unknown, revoked or expired)',
)

/** What a request answers while its database cannot be reached. */
export const DB_UNREACHABLE = unavailable('the database is not reachable; retry later')

/** What a write answers while its database takes no writes (a standby, a demoted primary). */
export const DB_READ_ONLY = unavailable('the database is read-only; retry later')

/** What readiness answers while the store cannot be reached. */
export const NOT_READY = unavailable('storage is not reachable')

/** `res` is answered with `expected`'s status and exactly that Error body. */
export function assertAnswered(
  res: { statusCode: number; body: string },
  expected: ErrorBody,
): void {
  assert.equal(res.statusCode, expected.status, res.body)
  assert.deepEqual(JSON.parse(res.body), expected)
}
