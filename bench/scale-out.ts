// `npm run bench -- --setups nginx3`: three instances of the service on one PostgreSQL database,
// rate limits in Redis, behind nginx as deploy/nginx.conf sets it up, against one instance reached
// straight, with the same wrk connections in total. Its own rounds, its own table.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Cleanup } from './cleanup.js'
import { type CpuStat, cpuStat, loadAverage, machine, stealShare } from './host.js'
import { type Front, startNginx } from './nginx.js'
import { check, type Op, opsFor } from './ops.js'
import { createDatabase, dropDatabase } from './postgres.js'
import {
  CREATE_BODY,
  cpuSeconds,
  createKey,
  LOAD_CPU,
  measuredRun,
  type Place,
  REDIS_LIMITS_ENV,
  type Running,
  SERVER_CPU,
  seed,
  startService,
  stop,
} from './service.js'
import { cpuUsPerRequest, fmt, median, pct, ratioCell } from './table.js'
import { type WrkResult, wrk } from './wrk.js'

export interface ScaleOutSettings {
  pets: number
  seconds: number
  warmup: number
  rounds: number
  connections: number
  /** The run's temporary folder; this scenario works in a folder of its own under it. */
  dir: string
  log: (line: string) => void
}

const INSTANCES = 3
/** The operations measured: a read of a page, a read of one row, a write. */
const OPS = ['list (limit 20)', 'get by id', 'create']

/** One side of the comparison, as wrk reaches it. */
interface Side {
  origin: string
  /** Warmed up straight before the side's own warm-up (see `round`). */
  instances: string[]
  ca?: Buffer
  key: string
  /** The processes whose CPU time is the side's: the instance(s) and nginx. */
  pids(): number[]
}

interface Samples {
  op: Op
  one: WrkResult[]
  three: WrkResult[]
  /** nginx's share of three's CPU µs/req, per round. */
  nginxUs: number[]
  errors: number
}

/** A fresh database seeded with `pets`, with a key; dropped by `cleanup` if not before. */
async function preparedPlace(
  s: ScaleOutSettings,
  dir: string,
  cleanup: Cleanup,
): Promise<{ place: Place; key: string; drop(): Promise<void> }> {
  mkdirSync(dir, { recursive: true })
  const db = await createDatabase()
  let dropped = false
  const drop = async () => {
    if (dropped) return
    dropped = true
    await dropDatabase(db.name)
  }
  cleanup.after(drop)
  const place = { dir, databaseUrl: db.url }
  await seed(place, s.pets)
  return { place, key: await createKey(place), drop }
}

/**
 * One round on fresh databases. Every server process, the three instances and nginx as much as the
 * one instance, is pinned to SERVER_CPU: both sides get the same core, so the ratio is what the
 * proxy and the coordination between instances cost for the same hardware. Spreading the three
 * over more cores would measure the cores instead, and wrk needs the other one.
 */
async function round(
  s: ScaleOutSettings,
  n: number,
  samples: Samples[] | undefined,
  cleanup: Cleanup,
): Promise<Samples[]> {
  const dir = join(s.dir, `scale-out-${n}`)
  const running: Running[] = []
  const stopAll = async () => {
    for (const r of running.splice(0).reverse()) await stop(r)
  }
  cleanup.after(stopAll)
  const single = await preparedPlace(s, join(dir, 'one'), cleanup)
  const shared = await preparedPlace(s, join(dir, 'three'), cleanup)
  try {
    const env = { ...REDIS_LIMITS_ENV }
    const one = await startService(
      single.place,
      SERVER_CPU,
      join(single.place.dir, 'service.log'),
      env,
    )
    running.push(one)
    const instances: Running[] = []
    // One after the other: each start runs the migrations, which are already done by the seeding.
    for (let i = 1; i <= INSTANCES; i++) {
      const log = join(shared.place.dir, `service-${i}.log`)
      // As deploy/petstore@.service behind nginx: the X-Forwarded-* headers are nginx's.
      const r = await startService(shared.place, SERVER_CPU, log, {
        ...env,
        PETSTORE_TRUST_PROXY: 'true',
      })
      running.push(r)
      instances.push(r)
    }
    const front: Front = await startNginx(
      join(dir, 'nginx'),
      instances.map((r) => r.port),
      SERVER_CPU,
    )
    running.push(front)
    s.log(
      `bench: scale-out round ${n}: one instance on port ${one.port}; ${INSTANCES} instances on ` +
        `${instances.map((r) => r.port).join(', ')} behind nginx on ${front.port}`,
    )
    const sides: Record<'one' | 'three', Side> = {
      one: {
        origin: `http://127.0.0.1:${one.port}`,
        instances: [],
        key: single.key,
        pids: () => [one.child.pid!],
      },
      three: {
        origin: front.origin,
        instances: instances.map((r) => `http://127.0.0.1:${r.port}`),
        ca: front.ca,
        key: shared.key,
        pids: () => [...instances.map((r) => r.child.pid!), ...front.pids()],
      },
    }
    const ops = opsFor(s.pets, dir).filter((op) => OPS.includes(op.name))
    const result = samples ?? ops.map((op) => ({ op, one: [], three: [], nginxUs: [], errors: 0 }))
    for (const side of Object.values(sides)) {
      for (const op of ops) await check(side.origin, side.key, op, CREATE_BODY, side.ca)
    }
    for (const sample of result) {
      for (const name of ['one', 'three'] as const) {
        const side = sides[name]
        const run = {
          url: `${side.origin}${sample.op.path}`,
          connections: s.connections,
          cpu: LOAD_CPU,
          headers: [`Authorization: Bearer ${side.key}`],
          ...(sample.op.script ? { script: sample.op.script } : {}),
        }
        // Through nginx each instance would get a third of the warm-up, and V8 would still be
        // compiling it during the measured run: each gets the one instance's warm-up first.
        for (const origin of s.warmup > 0 ? side.instances : []) {
          const straight = { ...run, url: `${origin}${sample.op.path}`, seconds: s.warmup }
          sample.errors += (await wrk(straight)).errors
        }
        if (s.warmup > 0) sample.errors += (await wrk({ ...run, seconds: s.warmup })).errors
        const nginxCpu = () => front.pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0)
        const nginxBefore = nginxCpu()
        const r = await measuredRun({ ...run, seconds: s.seconds }, side.pids())
        if (name === 'three') sample.nginxUs.push(((nginxCpu() - nginxBefore) * 1e6) / r.requests)
        sample.errors += r.errors
        sample[name].push(r)
        s.log(
          `bench: scale-out round ${n}/${s.rounds} ${sample.op.name} ${name === 'one' ? 'one instance' : `${INSTANCES} behind nginx`}: ` +
            `${r.rps.toFixed(0)} req/s, p99 ${r.p99Ms.toFixed(2)} ms, server CPU ${(r.serverCpu * 100).toFixed(0)}%, errors ${r.errors}` +
            (r.errors > 0 ? ` (${r.errorDetail})` : ''),
        )
      }
    }
    return result
  } finally {
    await stopAll()
    await single.drop()
    await shared.drop()
  }
}

function report(s: ScaleOutSettings, samples: Samples[], statBefore: CpuStat): string {
  const p = (runs: WrkResult[], f: (r: WrkResult) => number, digits = 0) =>
    fmt(median(runs.map(f)), digits)
  const rows = [
    '| operation | one req/s | one p50 / p99 ms | one CPU µs/req | three behind nginx req/s | three p50 / p99 ms | three CPU µs/req (of it nginx) | ratio three ÷ one (range) | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...samples.map(
      ({ op, one, three, nginxUs, errors }) =>
        `| ${op.name} | ${p(one, (r) => r.rps)} | ${p(one, (r) => r.p50Ms, 2)} / ${p(one, (r) => r.p99Ms, 2)} | ` +
        `${p(one, cpuUsPerRequest, 1)} | ${p(three, (r) => r.rps)} | ` +
        `${p(three, (r) => r.p50Ms, 2)} / ${p(three, (r) => r.p99Ms, 2)} | ` +
        `${p(three, cpuUsPerRequest, 1)} (${fmt(median(nginxUs), 1)}) | ` +
        `${ratioCell(three, one)} | ${errors} |`,
    ),
  ]
  const perRound = [
    '| operation | round | one req/s | one CPU | one p99 ms | three req/s | three CPU | three p99 ms | ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...samples.flatMap(({ op, one, three }) =>
      one.map(
        (o, i) =>
          `| ${op.name} | ${i + 1} | ${fmt(o.rps)} | ${pct(o.serverCpu)} | ${fmt(o.p99Ms, 2)} | ` +
          `${fmt(three[i]!.rps)} | ${pct(three[i]!.serverCpu)} | ${fmt(three[i]!.p99Ms, 2)} | ${fmt(three[i]!.rps / o.rps, 2)} |`,
      ),
    ),
  ]
  return [
    `### Scale-out: ${INSTANCES} instances behind nginx against one straight (PostgreSQL, Redis limits) — ${new Date().toISOString().slice(0, 10)}`,
    '',
    ...rows,
    '',
    `- **What this shows on this host:** every server process is pinned to CPU ${SERVER_CPU}, so the ${INSTANCES} instances and nginx share the one core the single instance has to itself. The ratio is the cost of the proxy (nginx, TLS at the edge as deploy/nginx.conf has it) and of the coordination between instances (${INSTANCES} event loops and pools on one core, Redis limits, one database), not added capacity: with a core per instance the three could serve more than one`,
    `- one = one instance reached straight over plain HTTP; three = ${INSTANCES} instances on one database (PETSTORE_TRUST_PROXY=true, as behind a proxy) behind nginx, deploy/nginx.conf with only its ports, paths and worker count (1, for its one core) replaced: HTTPS with HTTP/1.1 from wrk to nginx, kept-alive plain HTTP from nginx to the instances, round robin; both sides: PostgreSQL, rate limits in Redis (${REDIS_LIMITS_ENV.PETSTORE_REDIS_URL}), each on a fresh database seeded with ${s.pets.toLocaleString('en-US')} pets every round`,
    `- ${s.rounds} rounds, each operation ${s.warmup} s warm-up + ${s.seconds} s measured on one, then on three (whose instances first get ${s.warmup} s of warm-up each, straight, as the one does); wrk -t 1 -c ${s.connections} on CPU ${LOAD_CPU} against either side (the same connections in total); PostgreSQL and Redis are not pinned`,
    "- ratio = the median over the rounds of each round's three req/s ÷ one req/s, in brackets the lowest and highest round; req/s, latencies and CPU µs/req are medians over the rounds; CPU µs/req counts the instances and, for three, nginx's master and worker (their part in brackets), not PostgreSQL or Redis; errors = non-2xx + socket errors of all runs of the row, warm-ups included",
    `- load average at the end: ${loadAverage()}; steal while the rounds ran (/proc/stat): ${(stealShare(statBefore, cpuStat()) * 100).toFixed(1)}%`,
    `- ${machine()}`,
    '',
    '<details><summary>every scale-out round</summary>',
    '',
    ...perRound,
    '',
    '</details>',
    '',
  ].join('\n')
}

/** Runs the scenario's rounds; the markdown section and the errors of all its runs. */
export async function scaleOut(
  s: ScaleOutSettings,
  cleanup: Cleanup,
): Promise<{ markdown: string; errors: number }> {
  let samples: Samples[] | undefined
  const statBefore = cpuStat()
  for (let n = 1; n <= s.rounds; n++) samples = await round(s, n, samples, cleanup)
  return {
    markdown: report(s, samples!, statBefore),
    errors: samples!.reduce((sum, x) => sum + x.errors, 0),
  }
}
