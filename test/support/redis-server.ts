// A redis-server of the test's own, on a free port: tests may stop, kill and restart it without
// touching the shared one.
import { type ChildProcess, spawn } from 'node:child_process'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { freePort } from './process.js'

export interface OwnRedis {
  url: string
  port: number
  /** The running server's process id, for SIGSTOP and SIGCONT. */
  pid(): number
  /** Kills the server (connections are then refused) and waits for its exit. */
  kill(): Promise<void>
  /** Starts a new server on the same port, empty. */
  restart(): Promise<void>
  /** A client of the test's own, closed after the test. */
  client(): Promise<Redis>
}

async function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      if (out.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${out}`)))
  })
  child.stderr!.resume()
  return child
}

function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/** Starts a redis-server that keeps nothing on disk; after `t` it is resumed if stopped, and killed. */
export async function startOwnRedis(t: TestContext): Promise<OwnRedis> {
  const port = await freePort()
  let child = await spawnRedis(port)
  const clients: Redis[] = []
  t.after(async () => {
    for (const c of clients) c.disconnect()
    child.kill('SIGCONT')
    child.kill('SIGKILL')
    await ended(child)
  })
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: () => child.pid!,
    kill: async () => {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
      await ended(child)
    },
    restart: async () => {
      child = await spawnRedis(port)
    },
    client: async () => {
      const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 })
      clients.push(c)
      await new Promise((resolve) => c.once('ready', resolve))
      return c
    },
  }
}
