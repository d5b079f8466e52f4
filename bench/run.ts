// `npm run bench`: the service on each store (SQLite, PostgreSQL) against a bare node:http baseline
// where it runs, each Node server pinned to CPU 0 and wrk to CPU 1. See "How to reproduce" in
// docs/performance.md. `--stores sqlite,postgres` (the default) picks the stores; PostgreSQL is reached
// through PETSTORE_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
// `--setups` picks the services per store (SETUPS below: service, redis, pgbouncer) and the
// scale-out scenario nginx3 (bench/scale-out.ts); `--out <file>` writes the results there instead
// of bench/results/<date>-<pets>.md. Also --pets, --seconds, --warmup, --rounds, --connections,
// --reference, --keep.
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Cleanup } from './cleanup.js'
import { type CpuStat, cpuStat, loadAverage, machine, stealShare } from './host.js'
import { check, type Op, opsFor } from './ops.js'
import { type Bouncer, startBouncer } from './pgbouncer.js'
import { createDatabase, dropDatabase, serverSettings } from './postgres.js'
import { scaleOut } from './scale-out.js'
import {
  CREATE_BODY,
  createKey,
  LOAD_CPU,
  measuredRun,
  type Place,
  peakRssMb,
  REDIS_LIMITS_ENV,
  ROOT,
  type Running,
  SERVER_CPU,
  seed,
  sqlitePlace,
  startBaseline,
  startService,
  stop,
} from './service.js'
import { type OpSamples, perRound, scaleTable, setupTable, table } from './table.js'
import { wrk } from './wrk.js'

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    reference: { type: 'string' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    setups: { type: 'string', default: 'service' },
    out: { type: 'string' },
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

const STORE_NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const
type StoreKind = keyof typeof STORE_NAMES

function storeList(raw: string): StoreKind[] {
  const list = raw.split(',').map((s) => s.trim())
  if (list.some((s) => !(s in STORE_NAMES)) || new Set(list).size !== list.length) {
    process.stderr.write('bench: --stores must list sqlite and/or postgres, each once\n')
    process.exit(2)
  }
  return list as StoreKind[]
}
const stores = storeList(values.stores)

/**
 * The setups measured, each a service of its own: the service as deployed (the default), rate
 * limits in Redis, PostgreSQL reached through PgBouncer in transaction pooling mode
 * (bench/pgbouncer.ts).
 */
const SETUPS = {
  service: { suffix: '', env: {} },
  redis: { suffix: ' (Redis limits)', env: REDIS_LIMITS_ENV },
  pgbouncer: { suffix: ' (PgBouncer)', env: {}, only: 'postgres' },
} as const satisfies Record<
  string,
  { suffix: string; env: Record<string, string>; only?: 'postgres' }
>
type SetupName = keyof typeof SETUPS
/**
 * Scenarios with rounds and a table of their own, PostgreSQL only. nginx3: three instances behind
 * nginx against one reached straight (bench/scale-out.ts).
 */
const SCENARIOS = ['nginx3'] as const
type ScenarioName = (typeof SCENARIOS)[number]

function setupList(raw: string): (SetupName | ScenarioName)[] {
  const list = raw.split(',').map((s) => s.trim())
  const known = [...Object.keys(SETUPS), ...SCENARIOS]
  if (list.some((s) => !known.includes(s)) || new Set(list).size !== list.length) {
    process.stderr.write(`bench: --setups must list some of ${known.join(', ')}, each once\n`)
    process.exit(2)
  }
  return list as (SetupName | ScenarioName)[]
}
const chosen = setupList(values.setups)
const setups = chosen.filter((s): s is SetupName => s in SETUPS)
const nginx3 = chosen.includes('nginx3')

const log = (line: string) => process.stderr.write(`${line}\n`)

/** A service under test: its store, its key, and the operations as its catalogue's size needs them. */
interface ServiceUnderTest {
  store: StoreKind
  pets: number
  /** "SQLite", "PostgreSQL", or with the catalogue's size for a reference service: "SQLite 1,000". */
  label: string
  running: Running
  key: string
  ops: Op[]
  seedMs: number
  logFile: string
}

/** PostgreSQL databases made by this run, dropped by `cleanUp` whatever happens. */
const databases: string[] = []

async function dropDatabases(): Promise<void> {
  for (const name of databases.splice(0)) {
    await dropDatabase(name).catch((err: Error) =>
      log(`bench: could not drop ${name}: ${err.message}`),
    )
  }
}

/** A service to prepare: its store, its catalogue's size and its label. */
interface Planned {
  store: StoreKind
  pets: number
  label: string
  /** The service's environment beyond the store's (SETUPS). */
  env: Record<string, string>
  /** PostgreSQL reached through PgBouncer. */
  pgbouncer: boolean
}

/** The PgBouncer of the run, started for the first service that needs it. */
let bouncer: Promise<Bouncer> | undefined

/** A fresh, empty store of kind `store` for a service working in `dir`. */
async function freshPlace(
  { store, pgbouncer }: Planned,
  dir: string,
  cleanup: Cleanup,
): Promise<Place> {
  mkdirSync(dir, { recursive: true })
  if (store === 'sqlite') return sqlitePlace(dir)
  const db = await createDatabase()
  databases.push(db.name)
  if (!pgbouncer) return { dir, databaseUrl: db.url }
  bouncer ??= startBouncer(cleanup)
  return { dir, databaseUrl: (await bouncer).through(db.url) }
}

/** Seeds the store at `place` with `pets`, then starts the service on it twice (see below). */
async function prepareService(
  { store, pets, label, env }: Planned,
  place: Place,
): Promise<ServiceUnderTest> {
  log(`bench: ${label}: seeding ${pets} pets in ${place.databaseUrl}`)
  const seedMs = await seed(place, pets)
  log(`bench: ${label}: seeded in ${(seedMs / 1000).toFixed(2)} s`)
  const key = await createKey(place)
  const logFile = join(place.dir, 'service.log')
  // First start opens the freshly seeded store; the second is the start-up that is reported.
  await stop(await startService(place, SERVER_CPU, logFile, env))
  const running = await startService(place, SERVER_CPU, logFile, env)
  log(`bench: ${label}: ready in ${running.startupMs.toFixed(0)} ms on port ${running.port}`)
  return { store, pets, label, running, key, ops: opsFor(pets, place.dir), seedMs, logFile }
}

/** What one measured run targets: the baseline or one of the services. */
interface Target {
  /** 'baseline' or the service's label. */
  label: string
  pid: number
  port: number
  key: string
  /** The path and script of the i-th operation for this server. */
  request(i: number): { path: string; script?: string }
}

/**
 * One round: per operation, each target in turn (the baseline first), a warm-up run then a
 * measured one, with the CPU time the target's process spent during the measured run.
 */
async function measure(round: number, targets: Target[], samples: OpSamples[]): Promise<void> {
  for (const [i, s] of samples.entries()) {
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
      const result = await measuredRun({ ...run, seconds }, target.pid)
      ;(target.label === 'baseline' ? s.baseline : s.services[target.label]!).push(result)
      log(
        `bench: round ${round}/${rounds} ${s.name} ${target.label}: ${result.rps.toFixed(0)} req/s, ` +
          `p99 ${result.p99Ms.toFixed(2)} ms, server CPU ${(result.serverCpu * 100).toFixed(0)}%, errors ${result.errors}` +
          (result.errors > 0 ? ` (${result.errorDetail})` : ''),
      )
    }
  }
}

/** The results as markdown: the table, the scale tables, how the run went, every round. */
async function report(
  services: ServiceUnderTest[],
  samples: OpSamples[],
  statBefore: CpuStat,
): Promise<string> {
  const main = services.filter((s) => s.pets === pets)
  const references = services.filter((s) => s.pets !== pets)
  const names = new Map(
    main[0]!.ops.map((op) => [op.name, op.baseline === 'list' ? 'list' : 'create']),
  )
  const refSize = reference.toLocaleString('en-US')
  const settings = stores.includes('postgres') ? await serverSettings() : ''
  return [
    `### ${pets.toLocaleString('en-US')} pets — ${new Date().toISOString().slice(0, 10)}`,
    '',
    table(
      samples,
      main.map((s) => s.label),
      names,
    ),
    '',
    ...stores.flatMap((store) => {
      const [ref, ...others] = main.filter((s) => s.store === store)
      if (ref === undefined || others.length === 0) return []
      return [
        `Each setup against ${ref.label} in the same rounds (≥ 1 is as fast):`,
        '',
        setupTable(
          samples,
          ref.label,
          others.map((s) => s.label),
        ),
        '',
      ]
    }),
    ...references.flatMap((ref) => {
      const big = main.find((s) => s.store === ref.store)!.label
      return [
        `${big} against a ${refSize}-pet ${big} service measured in the same rounds:`,
        '',
        scaleTable(samples, big, ref.label, pets, reference),
        '',
      ]
    }),
    ...services.map(
      (s) =>
        `- ${s.label}, in the last round: peak RSS (VmHWM) ${peakRssMb(s.running.child.pid!).toFixed(1)} MB; ` +
        `start-up on the existing store (process start to first /readyz 200) ${s.running.startupMs.toFixed(0)} ms; ` +
        `seeding (\`petstore seed\`) ${(s.seedMs / 1000).toFixed(2)} s; log ${(statSync(s.logFile).size / 1e6).toFixed(0)} MB`,
    ),
    `- ${rounds} rounds, each operation ${warmup} s warm-up + ${seconds} s measured, in turn on the ` +
      `baseline, then ${services.map((s) => s.label).join(', then ')}; ` +
      `wrk -t 1 -c ${connections} on CPU ${LOAD_CPU}, each Node server on CPU ${SERVER_CPU}` +
      (stores.includes('postgres')
        ? '; PostgreSQL itself is not pinned: its processes run on either core, beside the service and beside wrk'
        : ''),
    "- ratio = the median over the rounds of each round's service req/s ÷ the same round's baseline req/s (baseline list for reads, baseline create for create), in brackets the lowest and highest round; req/s, latencies and CPU µs/req are medians over the rounds; errors = non-2xx + socket errors of all runs of the row, warm-ups included",
    "- CPU µs/req is the Node process's CPU time (all its threads) per request; PostgreSQL's own processes are not in it, so for PostgreSQL the CPU ratio leaves out the database's share of the work",
    '- services: logging JSON at info to a file, rate limiting on (limit 100,000,000 per window), auth on' +
      (stores.includes('sqlite') ? '; SQLite synchronous=FULL' : '') +
      (settings ? `; PostgreSQL: ${settings}` : ''),
    ...(bouncer ? [`- PgBouncer: ${(await bouncer).description}`] : []),
    ...skipped.map((line) => `- ${line}`),
    `- every round on fresh stores: each service's database made, seeded with ${pets.toLocaleString('en-US')} pets and started anew, so the creates of one round never grow the next round's catalogue`,
    `- load average at the end: ${loadAverage()} (about 2 is the bench itself, a server and wrk; more means other work shared the two cores); the server CPU column of every round shows how much of its core each server got (near 100% when it alone is the bottleneck)`,
    `- steal, the time the hypervisor took from the CPUs while the rounds ran (/proc/stat): ${(stealShare(statBefore, cpuStat()) * 100).toFixed(1)}% (on a virtual machine whose host is busy, req/s falls with it; CPU µs/req is what each request cost whatever the server was left of its core, and CPU ratio = baseline µs/req ÷ service µs/req)`,
    `- ${machine()}`,
    '',
    '<details><summary>every round</summary>',
    '',
    perRound(
      samples,
      services.map((s) => s.label),
    ),
    '',
    '</details>',
    '',
  ].join('\n')
}

/** The services' rounds against the baseline (see "What a run does" in docs/performance.md). */
async function serviceRounds(
  plan: Planned[],
  dir: string,
  running: Running[],
  cleanup: Cleanup,
): Promise<{ markdown: string; errors: number }> {
  let baseline: Running | undefined
  let services: ServiceUnderTest[] = []
  let samples: OpSamples[] = []
  const statBefore = cpuStat()
  for (let round = 1; round <= rounds; round++) {
    // Every store is made before any is seeded, so an unreachable PostgreSQL fails at once.
    const places: Place[] = []
    for (const p of plan) {
      const name = `${p.label.replace(/\W+/g, '-')}-${round}`
      places.push(await freshPlace(p, join(dir, name), cleanup))
    }
    services = []
    for (const [i, p] of plan.entries()) {
      const service = await prepareService(p, places[i]!)
      running.push(service.running)
      services.push(service)
    }
    const first = services.find((s) => s.pets === pets)!
    // Restarted with this round's key.
    if (baseline !== undefined) await stop(baseline)
    baseline = await startBaseline(SERVER_CPU, first.key)
    running.push(baseline)
    const bare = baseline
    const origin = (port: number) => `http://127.0.0.1:${port}`
    for (const [i, op] of first.ops.entries()) {
      for (const s of services) await check(origin(s.running.port), s.key, s.ops[i]!, CREATE_BODY)
      await check(
        origin(bare.port),
        first.key,
        { ...op, expect: op.baseline === 'list' ? { status: 200, items: 20 } : { status: 201 } },
        CREATE_BODY,
      )
    }

    const createLua = first.ops.find((op) => op.baseline === 'create')!.script!
    const targets: Target[] = [
      {
        label: 'baseline',
        pid: bare.child.pid!,
        port: bare.port,
        key: first.key,
        request: (i) =>
          first.ops[i]!.baseline === 'create'
            ? { path: '/v1/pets', script: createLua }
            : { path: '/v1/pets?limit=20' },
      },
      ...services.map((s) => ({
        label: s.label,
        pid: s.running.child.pid!,
        port: s.running.port,
        key: s.key,
        request: (i: number) => s.ops[i]!,
      })),
    ]
    if (samples.length === 0) {
      samples = first.ops.map((op) => ({
        name: op.name,
        baseline: [],
        services: Object.fromEntries(services.map((s) => [s.label, []])),
        warmupErrors: 0,
      }))
    }
    await measure(round, targets, samples)
    // The last round's services stay up for the report's peak RSS, then cleanUp stops them.
    if (round < rounds) {
      for (const s of services) await stop(s.running)
      await dropDatabases()
    }
  }
  const errors = samples.reduce(
    (n, s) =>
      n +
      s.warmupErrors +
      [s.baseline, ...Object.values(s.services)].flat().reduce((m, r) => m + r.errors, 0),
    0,
  )
  return { markdown: await report(services, samples, statBefore), errors }
}

/** Setups and scenarios left out for a store they do not apply to, said in the log and the results. */
const skipped: string[] = []
const skip = (line: string) => {
  log(`bench: ${line}`)
  skipped.push(line)
}

/** Per store, the reference service (if any) before the one it is compared with, as measured. */
function planned(): Planned[] {
  if (nginx3 && !stores.includes('postgres')) skip('nginx3 skipped: it runs on PostgreSQL only')
  return stores.flatMap((store) => {
    const applicable = setups.filter((setup) => {
      const only = (SETUPS[setup] as { only?: StoreKind }).only ?? store
      if (only !== store) {
        skip(`${STORE_NAMES[store]}: ${setup} skipped, it runs on ${STORE_NAMES[only]} only`)
      }
      return only === store
    })
    if (applicable.length === 0) return []
    return [
      ...(reference > 0
        ? [
            {
              store,
              pets: reference,
              label: `${STORE_NAMES[store]} ${reference.toLocaleString('en-US')}`,
              env: {},
              pgbouncer: false,
            },
          ]
        : []),
      ...applicable.map((setup) => ({
        store,
        pets,
        label: `${STORE_NAMES[store]}${SETUPS[setup].suffix}`,
        env: { ...SETUPS[setup].env },
        pgbouncer: setup === 'pgbouncer',
      })),
    ]
  })
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const running: Running[] = []
  const cleanup = new Cleanup()
  let cleaning: Promise<void> | undefined
  const cleanUp = () => {
    cleaning ??= (async () => {
      for (const r of running) await stop(r)
      await dropDatabases()
      await cleanup.run(log)
      if (!values.keep) rmSync(dir, { recursive: true, force: true })
    })()
    return cleaning
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void cleanUp().then(() => process.exit(130))
    })
  }
  try {
    const parts: { markdown: string; errors: number }[] = []
    const plan = planned()
    if (plan.length > 0) parts.push(await serviceRounds(plan, dir, running, cleanup))
    if (nginx3 && stores.includes('postgres')) {
      const settings = { pets, seconds, warmup, rounds, connections, dir, log }
      parts.push(await scaleOut(settings, cleanup))
    }
    if (parts.length === 0) {
      log('bench: nothing to measure with these --stores and --setups')
      process.exitCode = 2
      return
    }
    const md = parts.map((p) => p.markdown).join('\n')
    const out = values.out
      ? resolve(values.out)
      : join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-${pets}.md`)
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, md)
    process.stdout.write(`${md}\nwritten to ${out}\n`)
    if (parts.some((p) => p.errors > 0)) process.exitCode = 1
  } finally {
    await cleanUp()
  }
}

await main()
