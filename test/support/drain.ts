// The pieces of a drain seen from outside: a readiness probe on a connection kept open, and a
// create whose head the service has taken in while half its body is still to come.
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { unavailable } from './errors.js'
import { RawConnection, type RawResponse } from './raw-http.js'

export const SHUTTING_DOWN = unavailable('shutting down')

/** A readiness request, as raw bytes. */
export const READYZ = 'GET /readyz HTTP/1.1\r\nHost: petstore\r\n\r\n'

/** A connection of its own to `port`, destroyed after `t`. */
export async function openConnection(t: TestContext, port: number): Promise<RawConnection> {
  const connection = await RawConnection.open(port)
  t.after(() => connection.destroy())
  return connection
}

/** Asks for readiness on `probe`; the answer. */
export async function readiness(probe: RawConnection): Promise<RawResponse> {
  probe.write(READYZ)
  return probe.next()
}

/** The readiness answer of a draining service: 503, the connection to be closed. */
export function assertDraining(answer: RawResponse): void {
  assert.equal(answer.status, 503)
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(answer.headers.connection, 'close')
  assert.deepEqual(JSON.parse(answer.body), SHUTTING_DOWN)
}

/**
 * Sends the head of a create of `body` with `Expect: 100-continue`, so the service says when it
 * has taken the request in, then the first half of the body. `rest` sends the other half and
 * anything given after it on the same connection.
 */
export async function halfSentCreate(t: TestContext, port: number, key: string, body: string) {
  const upload = await openConnection(t, port)
  upload.write(
    [
      'POST /v1/pets HTTP/1.1',
      'Host: petstore',
      `Authorization: Bearer ${key}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Expect: 100-continue',
      '',
      '',
    ].join('\r\n'),
  )
  assert.equal((await upload.next()).status, 100)
  const half = Math.floor(body.length / 2)
  upload.write(body.slice(0, half))
  return {
    upload,
    rest: (after = '') => upload.write(`${body.slice(half)}${after}`),
  }
}
