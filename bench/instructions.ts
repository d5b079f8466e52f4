// `npm run bench:instructions`: the instructions the service runs per request, counted by
// valgrind's callgrind, for changes too small for `npm run bench` to show on a shared machine.
// See "How to reproduce" in docs/performance.md.
//
// Why instructions: on these virtual machines the CPU time of one request moves by up to 2x
// between runs minutes apart, and an effect under ~7% does not show in timings; an instruction
// count does not move with the host. Why a lockstep client: the service shares some work among
// the requests of one event-loop turn (the data version, the log flush), so
// the count per request depends on how many arrive per turn; a client that sends N requests and
// waits for all N answers gives every turn the same N, and runs of one build agree within ~0.3%.
// Why the main thread apart: V8's compiler and collector threads vary from run to run.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createKey, freePort, NODE_FLAGS, ROOT, seed, serviceEnv, sqlitePlace } from './service.js'

const { values } = parseArgs({
  options: {
    op: { type: 'string', default: 'get' },
    pets: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '12000' },
    count: { type: 'string', default: '4000' },
    connections: { type: 'string', default: '8' },
    // service: as deployed; node, fastify: bench/baseline-server.ts, the same answers precomputed,
    // on bare node:http or a bare Fastify app (what Fastify itself costs).
    server: { type: 'string', default: 'service' },
    // Keeps callgrind's files (one per thread) for callgrind_annotate instead of deleting them.
    keep: { type: 'boolean', default: false },
  },
})
const op = values.op
if (op !== 'get' && op !== 'list' && op !== 'create') {
  process.stderr.write('bench:instructions: --op must be get, list or create\n')
  process.exit(2)
}
const whole = (name: string, raw: string): number => {
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`bench:instructions: --${name} must be a whole number of at least 1\n`)
    process.exit(2)
  }
  return n
}
const server = values.server
if (server !== 'service' && server !== 'node' && server !== 'fastify') {
  process.stderr.write('bench:instructions: --server must be service, node or fastify\n')
  process.exit(2)
}
const baseline = server === 'node' || server === 'fastify'
const pets = whole('pets', values.pets)
const connections = whole('connections', values.connections)
// Whole rounds of `connections` requests, so that every counted turn carries the same number.
const rounds = (n: number) => Math.ceil(n / connections)
const warmupRounds = rounds(whole('warmup', values.warmup))
const countedRounds = rounds(whole('count', values.count))
const counted = countedRounds * connections

const log = (line: string) => process.stderr.write(`${line}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const dir = mkdtempSync(join(tmpdir(), 'petstore-instructions-'))
const out = join(dir, 'callgrind.out')
const place = sqlitePlace(dir)
let pid = 0
try {
  log(`bench:instructions: seeding ${pets} pets in ${dir}`)
  await seed(place, pets)
  const key = await createKey(place)
  const port = await freePort()
  const user = userInfo().username
  // callgrind_control finds the process by the user it runs as.
  const env = {
    ...serviceEnv(place, port),
    PETSTORE_COMPILE_CACHE: 'off',
    USER: user,
    LOGNAME: user,
  }
  const program = baseline
    ? ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts'), String(port), key, server]
    : [join(ROOT, 'dist', 'main.js'), 'serve']
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      '--instr-atstart=no',
      '--separate-threads=yes',
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...NODE_FLAGS,
      ...program,
    ],
    // tsx resolves from the checkout for a baseline.
    { env, cwd: baseline ? ROOT : dir, stdio: 'ignore' },
  )
  pid = child.pid!
  const control = (...args: string[]) =>
    execFileSync('callgrind_control', [...args, String(pid)], { env, stdio: 'ignore' })

  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const body = '{"name":"bench-pet","categoryId":7,"status":"available"}'
  let sent = 0
  const one = (): Promise<number> =>
    new Promise((resolve, reject) => {
      sent++
      const path =
        op === 'get'
          ? `/v1/pets/${((sent * 7919) % pets) + 1}`
          : op === 'list'
            ? '/v1/pets?limit=20'
            : '/v1/pets'
      const headers: Record<string, string> = { authorization: `Bearer ${key}` }
      if (op === 'create') headers['content-type'] = 'application/json'
      const method = op === 'create' ? 'POST' : 'GET'
      const req = request({ host: '127.0.0.1', port, path, method, agent, headers }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      req.on('error', reject)
      req.end(op === 'create' ? body : undefined)
    })
  const lockstep = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const statuses = await Promise.all(Array.from({ length: connections }, one))
      const bad = statuses.find((s) => s < 200 || s > 299)
      if (bad !== undefined) throw new Error(`${op} answered ${bad}`)
    }
  }

  for (let waited = 0; ; waited += 500) {
    if (child.exitCode !== null) throw new Error(`valgrind exited (${child.exitCode})`)
    const ready = await new Promise<boolean>((resolve) => {
      // A baseline answers anything once it listens; the service, /readyz once it can serve.
      const req = request({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
        res.resume()
        resolve(baseline || res.statusCode === 200)
      })
      req.on('error', () => resolve(false))
      req.end()
    })
    if (ready) break
    if (waited > 180_000) throw new Error('the service did not start under valgrind in 3 minutes')
    await sleep(500)
  }
  log(`bench:instructions: ${warmupRounds * connections} ${op} requests of warm-up`)
  await lockstep(warmupRounds)
  control('--instr=on')
  await lockstep(countedRounds)
  control('--instr=off')
  control('--dump')
  agent.destroy()

  // One file per thread of the dump: <out>.1-<thread>; thread 01 is the main thread.
  const readThreads = () =>
    readdirSync(dir)
      .filter((f) => f.startsWith('callgrind.out.1-'))
      .map((f) => {
        const totals = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'))
        return { thread: f.slice('callgrind.out.1-'.length), ir: Number(totals?.[1] ?? 0) }
      })
      .sort((a, b) => a.thread.localeCompare(b.thread))
  let threads = readThreads()
  for (let waited = 0; !threads.some((t) => t.thread === '01' && t.ir > 0); waited += 200) {
    if (waited > 30_000) throw new Error('callgrind wrote no count for the main thread')
    await sleep(200)
    threads = readThreads()
  }
  const main = threads.find((t) => t.thread === '01')!
  const perRequest = (ir: number) => Math.round(ir / counted).toLocaleString('en-US')
  console.log(`${op} (${server}): ${counted} requests in rounds of ${connections}, ${pets} pets`)
  console.log(`main thread: ${perRequest(main.ir)} instructions per request`)
  for (const t of threads) {
    if (t !== main && t.ir > main.ir / 100) {
      console.log(`thread ${t.thread}: ${perRequest(t.ir)} instructions per request`)
    }
  }
} finally {
  if (pid !== 0) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  if (values.keep) log(`bench:instructions: callgrind's files kept in ${dir}`)
  else rmSync(dir, { recursive: true, force: true })
}
