// Waiting for something a test cannot be told of (a process, a database, a breaker): polled, with
// a deadline past which the test fails naming what never happened.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) assert.fail(`never happened: ${what}`)
    await sleep(20)
  }
}

/** Whether 127.0.0.1:port refuses a TCP connection, i.e. nothing listens there. */
export function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'))
  })
}

/** Resolves once the port refuses connections: the server has closed its listener. */
export function listenerClosed(port: number): Promise<void> {
  return until(`the listener on port ${port} closes`, () => refuses(port))
}
