// `npm run bench`: the service against a bare node:http baseline on this machine, each server
// pinned to CPU 0 and wrk to CPU 1. See the "Benchmark" section of the README.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { encodeCursor } from '../src/pets/cursor.js'
import {
  cpuSeconds,
  createKey,
  peakRssMb,
  ROOT,
  type Running,
  seed,
  startBaseline,
  startService,
  stop,
} from './service.js'
import { type OpSamples, perRound, scaleTable, table } from './table.js'
import { wrk } from './wrk.js'

const SERVER_CPU = 0
const LOAD_CPU = 1

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    reference: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
})

function whole(name: string, raw: string, min: number): number {
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`bench: --${name} must be a whole number of at least ${min}\n`)
    process.exit(2)
  }
  return n
}

const pets = whole('pets', values.pets, 100)
const seconds = whole('seconds', values.seconds, 1)
const warmup = whole('warmup', values.warmup, 0)
const rounds = whole('rounds', values.rounds, 1)
const connections = whole('connections', values.connections, 1)
/**
 * A second service on a catalogue of this size runs in the same rounds, so that a large
 * catalogue's figures are judged against a small one's measured in the same hour, not in another
 * run: on these virtual machines the speed drifts by more than the 1.25x being judged.
 */
const reference =
  values.reference !== undefined ? whole('reference', values.reference, 0) : pets > 1000 ? 1000 : 0
if (reference !== 0 && (reference < 100 || reference === pets)) {
  process.stderr.write('bench: --reference must be 0 (none) or at least 100 and not --pets\n')
  process.exit(2)
}

interface Op {
  name: string
  baseline: 'list' | 'create'
  path: string
  script?: string
  /** What a correct answer looks like, checked once before the load. */
  expect: { status: number; items?: number }
}

const log = (line: string) => process.stderr.write(`${line}\n`)

/** The machine's CPU time so far, in ticks: all of it, and the part the host stole. */
interface CpuStat {
  total: number
  steal: number
}

/** From /proc/stat's `cpu` line. */
function cpuStat(): CpuStat {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/)
  const ticks = fields.slice(1, 9).map(Number)
  return { total: ticks.reduce((a, b) => a + b, 0), steal: ticks[7] ?? 0 }
}

function stealShare(before: CpuStat, after: CpuStat): number {
  const total = after.total - before.total
  return total > 0 ? (after.steal - before.steal) / total : 0
}

async function check(port: number, key: string, op: Op, body?: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}${op.path}`, {
    method: op.baseline === 'create' ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(op.baseline === 'create' ? { body } : {}),
  })
  const text = await res.text()
  const items = op.expect.items
  const parsed: unknown = JSON.parse(text)
  if (
    res.status !== op.expect.status ||
    (items !== undefined && (!Array.isArray(parsed) || parsed.length !== items))
  ) {
    throw new Error(`${op.name} on port ${port}: ${res.status} ${text.slice(0, 200)}`)
  }
}

const createBody = '{"name":"bench-pet","categoryId":7,"status":"available"}'

/** A service under test: its store, its key, and the operations as its catalogue's size needs them. */
interface ServiceUnderTest {
  running: Running
  key: string
  ops: Op[]
  seedMs: number
  logFile: string
}

/** The five operations against a catalogue of `pets`; scripts go to `dir`. */
function opsFor(pets: number, dir: string): Op[] {
  const createLua = join(dir, 'create.lua')
  writeFileSync(
    createLua,
    `wrk.method = "POST"\nwrk.body = '${createBody}'\nwrk.headers["Content-Type"] = "application/json"\n`,
  )
  const getLua = join(dir, 'get.lua')
  // Walks the whole catalogue in a scattered order, so no single row stays hot.
  writeFileSync(
    getLua,
    `local i = 0\nrequest = function()\n  i = i + 1\n` +
      `  return wrk.format("GET", "/v1/pets/" .. ((i * 7919) % ${pets} + 1))\nend\n`,
  )
  const deep = encodeCursor(BigInt(Math.floor(pets * 0.9)))
  return [
    {
      name: 'list (limit 20)',
      baseline: 'list',
      path: '/v1/pets?limit=20',
      expect: { status: 200, items: 20 },
    },
    {
      name: 'list status=sold',
      baseline: 'list',
      path: '/v1/pets?limit=20&status=sold',
      expect: { status: 200, items: 20 },
    },
    {
      name: `list after cursor (id ${Math.floor(pets * 0.9)})`,
      baseline: 'list',
      path: `/v1/pets?limit=20&cursor=${deep}`,
      expect: { status: 200, items: 20 },
    },
    {
      name: 'get by id',
      baseline: 'list',
      path: `/v1/pets/${Math.floor(pets / 2)}`,
      script: getLua,
      expect: { status: 200 },
    },
    {
      name: 'create',
      baseline: 'create',
      path: '/v1/pets',
      script: createLua,
      expect: { status: 201 },
    },
  ]
}

/** Seeds a fresh store of `pets` in `dir`, then starts the service on it twice (see below). */
async function prepareService(dir: string, pets: number): Promise<ServiceUnderTest> {
  mkdirSync(dir, { recursive: true })
  log(`bench: seeding ${pets} pets in ${dir}`)
  const seedMs = await seed(dir, pets)
  log(`bench: seeded in ${(seedMs / 1000).toFixed(2)} s`)
  const key = await createKey(dir)
  const logFile = join(dir, 'service.log')
  // First start opens the freshly seeded file; the second is the start-up that is reported.
  await stop(await startService(dir, SERVER_CPU, logFile))
  const running = await startService(dir, SERVER_CPU, logFile)
  log(
    `bench: service on ${pets} pets ready in ${running.startupMs.toFixed(0)} ms on port ${running.port}`,
  )
  return { running, key, ops: opsFor(pets, dir), seedMs, logFile }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const running: Running[] = []
  const cleanUp = async () => {
    for (const r of running) await stop(r)
    if (!values.keep) rmSync(dir, { recursive: true, force: true })
  }
  process.once('SIGINT', () => {
    void cleanUp().then(() => process.exit(130))
  })
  try {
    const service = await prepareService(dir, pets)
    running.push(service.running)
    const small =
      reference > 0
        ? await prepareService(join(dir, `reference-${reference}`), reference)
        : undefined
    if (small) running.push(small.running)
    const baseline = await startBaseline(SERVER_CPU, service.key)
    running.push(baseline)

    const createLua = service.ops.find((op) => op.baseline === 'create')!.script!
    for (const [i, op] of service.ops.entries()) {
      await check(service.running.port, service.key, op, createBody)
      if (small) await check(small.running.port, small.key, small.ops[i]!, createBody)
      await check(
        baseline.port,
        service.key,
        { ...op, expect: op.baseline === 'list' ? { status: 200, items: 20 } : { status: 201 } },
        createBody,
      )
    }

    /** What one measured run targets: the baseline, the service, or the reference service. */
    interface Target {
      label: 'baseline' | 'service' | 'reference'
      pid: number
      port: number
      key: string
      /** The path and script of the i-th operation for this server. */
      request(i: number): { path: string; script?: string }
    }
    const asTarget = (label: 'service' | 'reference', s: ServiceUnderTest): Target => ({
      label,
      pid: s.running.child.pid!,
      port: s.running.port,
      key: s.key,
      request: (i) => s.ops[i]!,
    })
    const targets: Target[] = [
      {
        label: 'baseline',
        pid: baseline.child.pid!,
        port: baseline.port,
        key: service.key,
        request: (i) =>
          service.ops[i]!.baseline === 'create'
            ? { path: '/v1/pets', script: createLua }
            : { path: '/v1/pets?limit=20' },
      },
      ...(small ? [asTarget('reference', small)] : []),
      asTarget('service', service),
    ]

    const statBefore = cpuStat()
    const samples: OpSamples[] = service.ops.map((op) => ({
      name: op.name,
      baseline: [],
      service: [],
      reference: [],
      warmupErrors: 0,
    }))
    for (let round = 1; round <= rounds; round++) {
      for (const i of service.ops.keys()) {
        const s = samples[i]!
        for (const target of targets) {
          const { path, script } = target.request(i)
          const run = {
            url: `http://127.0.0.1:${target.port}${path}`,
            connections,
            cpu: LOAD_CPU,
            headers: [`Authorization: Bearer ${target.key}`],
            ...(script ? { script } : {}),
          }
          if (warmup > 0) s.warmupErrors += (await wrk({ ...run, seconds: warmup })).errors
          const cpuBefore = cpuSeconds(target.pid)
          const wallBefore = performance.now()
          const result = await wrk({ ...run, seconds })
          result.serverCpu =
            (cpuSeconds(target.pid) - cpuBefore) / ((performance.now() - wallBefore) / 1000)
          s[target.label].push(result)
          log(
            `bench: round ${round}/${rounds} ${s.name} ${target.label}: ${result.rps.toFixed(0)} req/s, ` +
              `p99 ${result.p99Ms.toFixed(2)} ms, server CPU ${(result.serverCpu * 100).toFixed(0)}%, errors ${result.errors}` +
              (result.errors > 0 ? ` (${result.errorDetail})` : ''),
          )
        }
      }
    }
    const rssMb = peakRssMb(service.running.child.pid!)
    const loadAvg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT })
      .toString()
      .trim()
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT })
        .toString()
        .trim() !== ''
    const date = new Date().toISOString()
    const logBytes = statSync(service.logFile).size
    const names = new Map(
      service.ops.map((op) => [op.name, op.baseline === 'list' ? 'list' : 'create']),
    )
    const md = [
      `### ${pets.toLocaleString('en-US')} pets — ${date.slice(0, 10)}`,
      '',
      table(samples, names),
      '',
      ...(small
        ? [
            `Against a ${reference.toLocaleString('en-US')}-pet service measured in the same rounds:`,
            '',
            scaleTable(samples, pets, reference),
            '',
          ]
        : []),
      `- peak RSS of the service (VmHWM): ${rssMb.toFixed(1)} MB` +
        (small
          ? `; of the ${reference.toLocaleString('en-US')}-pet service: ${peakRssMb(small.running.child.pid!).toFixed(1)} MB`
          : ''),
      `- start-up on the existing database (process start to first /readyz 200): ${service.running.startupMs.toFixed(0)} ms`,
      `- seeding ${pets.toLocaleString('en-US')} pets (\`petstore seed\`): ${(service.seedMs / 1000).toFixed(2)} s`,
      `- ${rounds} rounds, each operation ${warmup} s warm-up + ${seconds} s measured, ` +
        `${small ? `baseline, then the ${reference.toLocaleString('en-US')}-pet service, then the service` : 'baseline then service'}; ` +
        `wrk -t 1 -c ${connections} on CPU ${LOAD_CPU}, each server on CPU ${SERVER_CPU}`,
      `- medians over the rounds; ratio = service req/s / baseline req/s (baseline list for reads, baseline create for create); errors = non-2xx + socket errors of all runs, warm-ups included`,
      `- service: logging JSON at info to a file (${(logBytes / 1e6).toFixed(0)} MB written), rate limiting on (limit 100,000,000 per window), auth on, SQLite synchronous=FULL`,
      `- load average at the end: ${loadAvg} (about 2 is the bench itself, a server and wrk; more means other work shared the two cores); the server CPU column of every round shows how much of its core each server got (near 100% when it alone is the bottleneck)`,
      `- time the host took from this machine's CPUs while the rounds ran (steal, /proc/stat): ${(stealShare(statBefore, cpuStat()) * 100).toFixed(1)}% (on a virtual machine whose host is busy, req/s falls with it; CPU µs/req is what each request cost whatever the server was left of its core, and CPU ratio = baseline µs/req ÷ service µs/req)`,
      `- ${cpus()[0]?.model ?? 'unknown CPU'} x${cpus().length}, Node ${process.version}, commit ${commit}${dirty ? ' (src modified)' : ''}`,
      '',
      '<details><summary>every round</summary>',
      '',
      perRound(samples),
      '',
      '</details>',
      '',
    ].join('\n')
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true })
    const out = join(ROOT, 'bench', 'results', `${date.slice(0, 10)}-${pets}.md`)
    writeFileSync(out, md)
    process.stdout.write(`${md}\nwritten to ${out}\n`)
    const errors = samples.reduce(
      (n, s) =>
        n +
        s.warmupErrors +
        [...s.baseline, ...s.service, ...s.reference].reduce((m, r) => m + r.errors, 0),
      0,
    )
    if (errors > 0) process.exitCode = 1
  } finally {
    await cleanUp()
  }
}

await main()
