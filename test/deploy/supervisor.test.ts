// `npm start` as process managers, container runtimes and terminals run it: a signal to npm drains
// the service (a request in flight across the signal is answered) and npm exits 0, with no node
// process left behind and the port released.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import type { Reply } from '../support/api.js'
import { type Exit, isRunning } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../support/workspace.js'

const KEY = 'supervisor-test-key-0123456789'
/** npm must be gone this soon after the signal: the drain delay, then a prompt close. */
const EXIT_BOUND_MS = 8000

/** Whether the port still takes TCP connections. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * A create whose body is held back until `finish`: a request in flight across the signal.
 * `taken` settles on the service's 100 Continue, once it has the request's head.
 */
function heldCreate(port: number) {
  const body = '{"name":"in flight","categoryId":7}'
  let finish!: () => void
  let taken!: Promise<void>
  const reply = new Promise<Reply>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/pets',
        agent: false,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          expect: '100-continue',
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
      },
    )
    req.on('error', reject)
    taken = new Promise((resolve) => req.once('continue', resolve))
    req.write(body.slice(0, 10))
    finish = () => req.end(body.slice(10))
  })
  return { reply, taken, finish: () => finish() }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref(),
    ),
  ])
}

const cases = [
  { name: 'SIGTERM to npm', signal: 'SIGTERM', group: false, drainDelayMs: 1000 },
  { name: 'SIGINT to npm', signal: 'SIGINT', group: false, drainDelayMs: 0 },
  // A terminal's Ctrl-C signals npm and node both; npm then forwards its own copy to node.
  { name: "Ctrl-C to npm's process group", signal: 'SIGINT', group: true, drainDelayMs: 0 },
] as const

storeIndependent(() => {
  describe('npm start under a supervisor', { concurrency: true }, () => {
    for (const c of cases) {
      test(`${c.name}: the service drains, npm exits 0, nothing is left running`, {
        timeout: 60_000,
      }, async (t) => {
        const h = workspace(t, JSON_LOGS_NO_LIMIT)
        const npm = await h.startNpm(
          { PETSTORE_API_KEYS: KEY, PETSTORE_DRAIN_DELAY: '1s' },
          { detached: c.group },
        )
        await npm.waitFor(/"msg":"Server listening at /)
        const nodePid = npm.logLines().find((l) => l.msg.startsWith('Server listening at '))!.pid
        assert.notEqual(nodePid, npm.pid, 'node runs as a process of its own')
        assert.equal(await accepts(npm.port), true)

        const inFlight = heldCreate(npm.port)
        // The request's head reaches the service before the signal does.
        await inFlight.taken
        const signalled = performance.now()
        process.kill(c.group ? -npm.pid : npm.pid, c.signal)
        await within(npm.waitFor(/"msg":"draining before exit"/), EXIT_BOUND_MS, 'the drain')
        inFlight.finish()
        const created = await inFlight.reply
        assert.equal(created.status, 201, created.body)
        assert.match(created.body, /^\{"id":1,"name":"in flight","categoryId":7\}$/)

        const exit: Exit = await within(npm.exited, EXIT_BOUND_MS, 'npm exiting')
        const elapsedMs = performance.now() - signalled
        assert.deepEqual(exit, { code: 0, signal: null }, npm.stderr())
        assert.ok(elapsedMs >= c.drainDelayMs, `${elapsedMs} ms`)
        assert.equal(isRunning(nodePid), false, `node ${nodePid} is still running`)
        assert.equal(await accepts(npm.port), false, 'the port still accepts connections')
        const drains = npm.logLines().filter((l) => l.msg === 'draining before exit')
        assert.deepEqual(
          drains.map((l) => [l.pid, l.signal, l.drainDelayMs]),
          [[nodePid, c.signal, c.drainDelayMs]],
        )
        assert.equal(npm.stderr(), '')
      })
    }
  })
})
