// What a synchronous standby costs a create: `npm run build && node --import tsx
// bench/sync-standby.ts [--seconds 5] [--rounds 3]`. A primary and a streaming standby of their own
// (test/support/replicated-postgres.ts, fsync on), the service straight on the primary; rounds
// alternate synchronous_standby_names between the standby and '' (asynchronous), each round one
// client creating pets one after another (ms per create) and then 16 at once (creates per second).
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { LISTENING_LINE } from '../test/support/process.js'
import {
  queryOne,
  STANDBY_NAME,
  startReplicatedPostgres,
} from '../test/support/replicated-postgres.js'
import { until } from '../test/support/wait.js'
import { Cleanup } from './cleanup.js'
import { ROOT } from './service.js'

const KEY = 'sync-standby-bench-key-0123456789'
const CONCURRENT = 16

interface Round {
  mode: 'sync' | 'async'
  msPerCreate: number
  p99Ms: number
  perSecondConcurrent: number
}

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' } },
})
const seconds = Number(values.seconds)
const rounds = Number(values.rounds)

async function startServiceOn(url: string, cleanup: Cleanup): Promise<number> {
  const cwd = mkdtempSync(join(tmpdir(), 'petstore-sync-bench-'))
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist/main.js'), 'serve'], {
    cwd,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      PETSTORE_DATABASE_URL: url,
      PETSTORE_API_KEYS: KEY,
      PETSTORE_RATE_LIMIT_MAX: '100000000',
      PETSTORE_METRICS_PORT: 'off',
      PETSTORE_LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  cleanup.after(() => {
    child.kill('SIGKILL')
    rmSync(cwd, { recursive: true, force: true })
  })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  await until('the service listens', () => LISTENING_LINE.test(out), 60_000)
  return Number(new URL(LISTENING_LINE.exec(out)![1]!).port)
}

function create(port: number, agent: Agent, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ name, categoryId: 1 })
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/pets',
        agent,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode!))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** `clients` loops creating for `seconds`: the latency of each create, in ms. */
async function load(port: number, clients: number, tag: string): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients })
  const latencies: number[] = []
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; performance.now() < end; i++) {
        const started = performance.now()
        const status = await create(port, agent, `${tag}-${c}-${i}`)
        if (status !== 201) throw new Error(`a create answered ${status}`)
        latencies.push(performance.now() - started)
      }
    }),
  )
  agent.destroy()
  return latencies
}

async function setMode(url: string, mode: 'sync' | 'async'): Promise<void> {
  const names = mode === 'sync' ? STANDBY_NAME : ''
  await queryOne(url, `ALTER SYSTEM SET synchronous_standby_names = '${names}'`)
  await queryOne(url, 'SELECT pg_reload_conf()')
  await until(`the standby is ${mode}`, async () => {
    const row = await queryOne<{ s: string }>(
      url,
      `SELECT sync_state AS s FROM pg_stat_replication WHERE application_name = '${STANDBY_NAME}'`,
    )
    return row?.s === mode
  })
}

async function main(): Promise<void> {
  const cleanup = new Cleanup()
  try {
    const servers = await startReplicatedPostgres(cleanup, { fsync: true })
    const port = await startServiceOn(servers.primary.url, cleanup)
    await load(port, CONCURRENT, 'warm')
    const results: Round[] = []
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['async', 'sync'] as const) {
        await setMode(servers.primary.url, mode)
        const one = (await load(port, 1, `${mode}-${r}-one`)).sort((a, b) => a - b)
        const many = await load(port, CONCURRENT, `${mode}-${r}-many`)
        results.push({
          mode,
          msPerCreate: one.reduce((a, b) => a + b, 0) / one.length,
          p99Ms: one[Math.floor(one.length * 0.99)]!,
          perSecondConcurrent: many.length / seconds,
        })
        const last = results.at(-1)!
        console.log(
          `round ${r + 1} ${mode}: 1 client ${last.msPerCreate.toFixed(2)} ms per create (p99 ${last.p99Ms.toFixed(2)} ms); ${CONCURRENT} clients ${Math.round(last.perSecondConcurrent)} creates/s`,
        )
      }
    }
  } finally {
    await cleanup.run((line) => console.error(line))
  }
}

await main()
