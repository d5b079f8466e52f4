// Creates per second through one instance and through three, on one PostgreSQL, from the same
// number of concurrent clients. Each round starts its instances (`node dist/main.js serve`,
// so run `npm run build` first) on a fresh schema, with rate limits in Redis, drives them
// round-robin for a fixed time and counts the 201s; the schema is dropped afterwards.
//
//   node --import tsx scripts/measure-creates.ts [--clients 32] [--seconds 10] [--instances 1,3]
//
// PostgreSQL comes from PETSTORE_BENCH_MEASURE_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test), Redis from PETSTORE_REDIS_URL (default
// redis://127.0.0.1:6379). It measures; it asserts nothing.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url))
const KEY = 'measure-creates-key-0123456789'
const DATABASE_URL =
  process.env.PETSTORE_BENCH_MEASURE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.PETSTORE_REDIS_URL ?? 'redis://127.0.0.1:6379'

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '10' },
    instances: { type: 'string', default: '1,3' },
  },
})
const clients = Number(values.clients)
const seconds = Number(values.seconds)
const rounds = values.instances.split(',').map(Number)

async function admin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

function start(databaseUrl: string): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      PETSTORE_DATABASE_URL: databaseUrl,
      PETSTORE_API_KEYS: KEY,
      PETSTORE_RATE_LIMIT_STORE: 'redis',
      PETSTORE_REDIS_URL: REDIS_URL,
      PETSTORE_RATE_LIMIT_MAX: '100000000',
      PETSTORE_LOG_LEVEL: 'warn',
      PETSTORE_METRICS_PORT: 'off',
      PETSTORE_DRAIN_DELAY: '0s',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const m = /^petstore listening on (http:\/\/\S+) \(store: postgres\)$/m.exec(out)
      if (m) resolve({ child, origin: m[1]! })
    })
    child.once('close', (code) => reject(new Error(`server exited (${code}) before listening`)))
  })
}

interface Figures {
  creates: number
  perSecond: number
  /** Every committed transaction of the database, the create batches being most of them. */
  commitsPerSecond: number
  /** Mean number of sessions waiting for the insert lock, sampled every 100 ms. */
  lockWaiters: number
}

async function round(instances: number): Promise<Figures> {
  const schema = `measure_${randomBytes(6).toString('hex')}`
  await admin((c) => c.query(`CREATE SCHEMA ${schema}`))
  const url = new URL(DATABASE_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  const servers: ChildProcess[] = []
  try {
    // One at a time: the first migrates, the others find the schema up to date.
    const origins: string[] = []
    for (let i = 0; i < instances; i++) {
      const s = await start(url.toString())
      servers.push(s.child)
      origins.push(s.origin)
    }
    const drive = async (until: number, c: number): Promise<number> => {
      let done = 0
      for (let i = 0; Date.now() < until; i++) {
        const res = await fetch(`${origins[(c + i) % origins.length]}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `pet-${c}-${i}`, categoryId: i }),
        })
        await res.arrayBuffer()
        if (res.status !== 201) throw new Error(`create answered ${res.status}`)
        done++
      }
      return done
    }
    const all = (ms: number) => {
      const until = Date.now() + ms
      return Promise.all(Array.from({ length: clients }, (_, c) => drive(until, c)))
    }
    await all(1000) // warm-up: connections, prepared statements, JIT
    // While it runs: how many sessions wait for the insert lock, and how many commits there are.
    const database = new URL(DATABASE_URL).pathname.slice(1)
    const observer = new pg.Client({ connectionString: DATABASE_URL })
    await observer.connect()
    const commits = async () =>
      Number(
        (
          await observer.query<{ n: string }>(
            'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1',
            [database],
          )
        ).rows[0]!.n,
      )
    const commitsBefore = await commits()
    const waiting: number[] = []
    let observing = true
    const sampling = (async () => {
      while (observing) {
        const { rows } = await observer.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
          [database],
        )
        waiting.push(rows[0]!.n)
        await new Promise((r) => setTimeout(r, 100))
      }
    })()
    const started = performance.now()
    const counts = await all(seconds * 1000)
    const elapsed = (performance.now() - started) / 1000
    observing = false
    await sampling
    // pg_stat_database lags by up to its flush interval; give it that long.
    await new Promise((r) => setTimeout(r, 1500))
    const transactions = (await commits()) - commitsBefore
    await observer.end()
    const creates = counts.reduce((a, b) => a + b, 0)
    return {
      creates,
      perSecond: creates / elapsed,
      commitsPerSecond: transactions / elapsed,
      lockWaiters: waiting.reduce((a, b) => a + b, 0) / Math.max(1, waiting.length),
    }
  } finally {
    for (const child of servers) child.kill('SIGKILL')
    await admin((c) => c.query(`DROP SCHEMA ${schema} CASCADE`))
  }
}

console.log(
  `${clients} concurrent clients, ${seconds} s per round, ${availableParallelism()} CPUs, Node ${process.version}`,
)
for (const n of rounds) {
  const f = await round(n)
  console.log(
    `${n} instance${n === 1 ? ' ' : 's'}: ${f.creates} creates, ${f.perSecond.toFixed(0)} creates/s, ` +
      `${f.commitsPerSecond.toFixed(0)} commits/s (${(f.perSecond / f.commitsPerSecond).toFixed(1)} creates each), ` +
      `${f.lockWaiters.toFixed(1)} sessions waiting for the insert lock on average`,
  )
}
