// The servers of `npm run bench` as child processes: the baseline and the real service
// (`node dist/main.js serve`, on SQLite or PostgreSQL), each pinned to one core with taskset, plus
// the CLI steps that prepare the service's store (seed, keys create).
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { runCommand, type WrkResult, type WrkRun, wrk } from './wrk.js'

export const ROOT = resolve(import.meta.dirname, '..')
/** Each Node server runs on this core, wrk on the other. */
export const SERVER_CPU = 0
export const LOAD_CPU = 1

/** Rate-limit counters in the Redis of PETSTORE_BENCH_REDIS_URL (default 127.0.0.1:6379). */
export const REDIS_LIMITS_ENV = {
  PETSTORE_RATE_LIMIT_STORE: 'redis',
  PETSTORE_REDIS_URL: process.env.PETSTORE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
}

/** The body of every create the bench sends. */
export const CREATE_BODY = '{"name":"bench-pet","categoryId":7,"status":"available"}'

/** Writes wrk's script for creates (POST CREATE_BODY) into `dir`; returns its path. */
export function createScript(dir: string): string {
  const file = join(dir, 'create.lua')
  writeFileSync(
    file,
    `wrk.method = "POST"\nwrk.body = '${CREATE_BODY}'\nwrk.headers["Content-Type"] = "application/json"\n`,
  )
  return file
}
const CLI = join(ROOT, 'dist', 'main.js')
/**
 * Node's flags for the service, as `npm start`, the `petstore` bin and deploy/*.service give them,
 * and for the baseline too, so that both run with the same V8 settings. Without
 * `--no-memory-reducer` V8 shrinks an idle process's heap, and the baseline, idle while the other
 * servers are measured, came back slower round after round in the three-server runs: the likely
 * cause of a drift that flattered their later ratios (docs/performance.md).
 */
export const NODE_FLAGS = ['--no-memory-reducer', '--max-semi-space-size=8']

export interface Running {
  child: ChildProcess
  port: number
  /** Process start to the first `/readyz` 200 (the service) or the `listening` line (baseline). */
  startupMs: number
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer()
    s.once('error', fail)
    s.listen(0, '127.0.0.1', () => {
      const address = s.address()
      const port = typeof address === 'object' && address ? address.port : 0
      s.close(() => ok(port))
    })
  })
}

/** Where a service runs: its folder (working directory, log, wrk scripts) and its database. */
export interface Place {
  dir: string
  /** `sqlite:<file>` or `postgres://…` */
  databaseUrl: string
}

/** A SQLite store in `dir`. */
export const sqlitePlace = (dir: string): Place => ({
  dir,
  databaseUrl: `sqlite:${join(dir, 'petstore.db')}`,
})

/** The service's environment: only what the bench sets, never the caller's PETSTORE_* settings. */
export function serviceEnv(place: Place, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PETSTORE_')) env[k] = v
  return {
    ...env,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PETSTORE_DATABASE_URL: place.databaseUrl,
    // Rate limiting stays on (every request is counted) but the bench never reaches the limit.
    PETSTORE_RATE_LIMIT_MAX: '100000000',
    PETSTORE_LOG_LEVEL: 'info',
    PETSTORE_LOG_FORMAT: 'json',
    PETSTORE_METRICS_PORT: 'off',
    PETSTORE_DRAIN_DELAY: '0s',
  }
}

function cli(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  return runCommand(process.execPath, [CLI, ...args], { env, cwd })
}

/** Seeds the store (its own process, as an operator would) and returns the wall time in ms. */
export async function seed(place: Place, pets: number): Promise<number> {
  const started = performance.now()
  await cli(['seed', '--count', String(pets)], serviceEnv(place, 0), place.dir)
  return performance.now() - started
}

export async function createKey(place: Place): Promise<string> {
  const out = await cli(['keys', 'create', '--name', 'bench'], serviceEnv(place, 0), place.dir)
  const key = out.trim().split('\n').at(-1)?.trim() ?? ''
  if (!/^pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/.test(key)) throw new Error(`no key in: ${out}`)
  return key
}

function status(port: number, path: string): Promise<number> {
  return new Promise((ok) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      res.on('end', () => ok(res.statusCode ?? 0))
    })
    req.on('error', () => ok(0))
    req.end()
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function exited(child: ChildProcess): Promise<never> {
  return new Promise((_, fail) =>
    child.once('exit', (code) => fail(new Error(`server exited early (${code})`))),
  )
}

/**
 * Starts the service pinned to `cpu`, its log (JSON, one line per request, as in production)
 * appended to `logFile`, and waits for `/readyz` to answer 200, polling every 2 ms.
 */
export async function startService(
  place: Place,
  cpu: number,
  logFile: string,
  env: Record<string, string> = {},
): Promise<Running> {
  const port = await freePort()
  const log = openSync(logFile, 'a')
  const started = performance.now()
  const child = spawn(
    'taskset',
    ['-c', String(cpu), process.execPath, ...NODE_FLAGS, CLI, 'serve'],
    {
      env: { ...serviceEnv(place, port), ...env },
      cwd: place.dir,
      stdio: ['ignore', log, log],
    },
  )
  closeSync(log)
  const died = exited(child)
  died.catch(() => {})
  for (;;) {
    if ((await Promise.race([status(port, '/readyz'), died])) === 200) break
    await sleep(2)
  }
  return { child, port, startupMs: performance.now() - started }
}

/** `kind`: node:http, or the same answers from a bare Fastify app (baseline-server.ts). */
export async function startBaseline(
  cpu: number,
  key: string,
  kind: 'node:http' | 'fastify' = 'node:http',
): Promise<Running> {
  const port = await freePort()
  const started = performance.now()
  const script = join(ROOT, 'bench', 'baseline-server.ts')
  const child = spawn(
    'taskset',
    [
      '-c',
      String(cpu),
      process.execPath,
      ...NODE_FLAGS,
      '--import',
      'tsx',
      script,
      String(port),
      key,
      ...(kind === 'fastify' ? ['fastify'] : []),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const died = exited(child)
  died.catch(() => {})
  await Promise.race([
    new Promise<void>((ok) => {
      let out = ''
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('listening')) ok()
      })
    }),
    died,
  ])
  return { child, port, startupMs: performance.now() - started }
}

/** Peak resident set size (VmHWM) of a running process, in MB. */
export function peakRssMb(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmHWM for process ${pid}`)
  return Number(m[1]) / 1024
}

export function stop(r: Running): Promise<void> {
  return new Promise((ok) => {
    if (r.child.exitCode !== null || r.child.signalCode !== null) return ok()
    const timer = setTimeout(() => r.child.kill('SIGKILL'), 10_000)
    r.child.once('exit', () => {
      clearTimeout(timer)
      ok()
    })
    r.child.kill('SIGTERM')
  })
}

/** CPU seconds (user + system) a process has used so far; clock ticks are 1/100 s on Linux. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/**
 * A wrk run against the server `pid` (or the processes `pid` lists, together), with the share of a
 * core it used during the run.
 */
export async function measuredRun(run: WrkRun, pid: number | number[]): Promise<WrkResult> {
  const pids = typeof pid === 'number' ? [pid] : pid
  const cpu = () => pids.reduce((sum, p) => sum + cpuSeconds(p), 0)
  const cpuBefore = cpu()
  const wallBefore = performance.now()
  const result = await wrk(run)
  result.serverCpu = (cpu() - cpuBefore) / ((performance.now() - wallBefore) / 1000)
  return result
}
