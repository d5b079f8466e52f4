// `npm run bench:pipeline`: how far a request pipeline built on Fastify's routing can go, against
// the service's own, on SQLite. In interleaved rounds, list and get (and create) each run on: the
// bare node:http baseline; the same answers from a bare Fastify app (no logger, no hooks, no
// schemas: the ceiling of any pipeline that goes through Fastify's router); the service. Ratios
// are to the same round's baseline; medians over the rounds.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import {
  createKey,
  createScript,
  LOAD_CPU,
  measuredRun,
  type Running,
  SERVER_CPU,
  seed,
  sqlitePlace,
  startBaseline,
  startService,
  stop,
} from './service.js'
import { cpuUsPerRequest, median } from './table.js'
import { type WrkResult, wrk } from './wrk.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
  },
})
const rounds = Number(values.rounds)
const seconds = Number(values.seconds)
const warmup = Number(values.warmup)

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-pipeline-'))
  const running: Running[] = []
  try {
    const place = sqlitePlace(dir)
    await seed(place, 1000)
    const key = await createKey(place)
    const log = join(dir, 'service.log')
    const targets: { label: string; server: Running }[] = [
      { label: 'node:http', server: await startBaseline(SERVER_CPU, key) },
      { label: 'bare Fastify', server: await startBaseline(SERVER_CPU, key, 'fastify') },
      { label: 'service', server: await startService(place, SERVER_CPU, log) },
    ]
    running.push(...targets.map((t) => t.server))
    const scriptFile = createScript(dir)
    const ops = [
      { name: 'list (limit 20)', path: '/v1/pets?limit=20' },
      { name: 'get by id', path: '/v1/pets/500' },
      { name: 'create', path: '/v1/pets', script: scriptFile },
    ]
    const results = new Map<string, WrkResult[]>()
    for (let round = 1; round <= rounds; round++) {
      for (const op of ops) {
        for (const t of targets) {
          const run = {
            url: `http://127.0.0.1:${t.server.port}${op.path}`,
            connections: 32,
            cpu: LOAD_CPU,
            headers: [`Authorization: Bearer ${key}`],
            ...(op.script ? { script: op.script } : {}),
          }
          if (warmup > 0) await wrk({ ...run, seconds: warmup })
          const result = await measuredRun({ ...run, seconds }, t.server.child.pid!)
          const k = `${op.name}|${t.label}`
          results.set(k, [...(results.get(k) ?? []), result])
          process.stderr.write(
            `round ${round} ${op.name} ${t.label}: ${result.rps.toFixed(0)} req/s, errors ${result.errors}\n`,
          )
        }
      }
    }
    const lines = [
      `| operation | ${targets.map((t) => `${t.label} ratio (CPU µs/req)`).join(' | ')} |`,
      `| --- | ${targets.map(() => '---:').join(' | ')} |`,
    ]
    for (const op of ops) {
      const base = results.get(`${op.name}|node:http`)!
      const cells = targets.map((t) => {
        const runs = results.get(`${op.name}|${t.label}`)!
        const ratio = median(runs.map((r, i) => r.rps / base[i]!.rps))
        return `${ratio.toFixed(2)} (${median(runs.map(cpuUsPerRequest)).toFixed(1)})`
      })
      lines.push(`| ${op.name} | ${cells.join(' | ')} |`)
    }
    process.stdout.write(`${lines.join('\n')}\n`)
  } finally {
    for (const r of running) await stop(r)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
