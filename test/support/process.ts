import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { LISTENING_BANNER, METRICS_BANNER } from '../../src/server.js'

/** A loopback port free now, for a program that must be told its port before it starts. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      lines.push(JSON.parse(line) as LogLine)
    } catch {
      // Not a whole JSON line: the test's assertions say what they need from the others.
    }
  }
  return lines
}

/** Pids of the workers that announced they listen, in the order they did. */
export function listeningWorkerPids(lines: LogLine[]): number[] {
  return lines.filter((l) => l.msg === 'worker listening').map((l) => l.workerPid as number)
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The test's environment without any setting of the service, so only what a test sets applies. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('PETSTORE_') && name !== 'PORT' && name !== 'HOST') env[name] = value
  }
  return env
}

/**
 * The key a first start wrote to `<dir>/bootstrap-key`: in the tests its stdout is a pipe, not a
 * terminal, so the key is in that file (beside the SQLite file, or in the working directory).
 */
export function bootstrapKey(dir: string): string {
  return readFileSync(join(dir, 'bootstrap-key'), 'utf8').trimEnd()
}

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface ServiceOptions {
  /** `petstore` arguments; `['serve']` unless given. */
  args?: string[]
  /** Settings over the defaults below (a loopback port of its own, SQLite in `cwd`, no metrics). */
  env?: Record<string, string>
  /** The working directory; a temp dir removed after the test unless given. */
  cwd?: string
  /** Another program than `node dist/main.js`, e.g. `npm`, with `args` as its arguments. */
  command?: string
  detached?: boolean
  /** Milliseconds before the process is killed with SIGTERM (spawn's own timeout). */
  timeout?: number
}

/** A JSON log line; the primary and the workers write the same shape (pino's). */
export interface LogLine {
  level: number
  pid: number
  msg: string
  [field: string]: unknown
}

/** A spawned `petstore` (or `npm start`) process and its output. */
export interface ServiceProcess {
  child: ChildProcess
  /** The spawned process's pid: the primary when serving with workers; npm's when started by npm. */
  pid: number
  cwd: string
  stdout(): string
  stderr(): string
  /** Every stdout line that is a JSON log line, in order. */
  logLines(): LogLine[]
  /** Resolves once stdout satisfies `check`; rejects if the process ends first. */
  waitFor(check: RegExp | ((stdout: string) => boolean)): Promise<void>
  /** Settles after the output streams end, so nothing printed is missed. */
  exited: Promise<Exit>
  /** Sends `signal` (SIGTERM unless given) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<Exit>
  /** SIGKILL to the process and to every process that logged (workers, the node under npm). */
  killAll(): Promise<void>
}

export interface StartedService extends ServiceProcess {
  /** Where the API listens, as the start-up line says, e.g. `http://127.0.0.1:41234`. */
  origin: string
  port: number
  /** The metrics URL from its start-up line; null when PETSTORE_METRICS_PORT is off. */
  metricsUrl: string | null
}

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
/** The API's start-up line; its group is the origin. */
export const LISTENING_LINE = new RegExp(
  `^${LISTENING_BANNER} (\\S+) \\(store: [a-z]+(?:, workers: \\d+)?\\)$`,
  'm',
)
const METRICS_ON = new RegExp(`^${METRICS_BANNER} (\\S+)$`, 'm')

/**
 * Spawns `petstore <args>` with only the test's settings and collects its output; after `t` it is
 * killed unless it has exited already.
 */
export function spawnService(t: TestContext, opts: ServiceOptions = {}): ServiceProcess {
  const cwd = opts.cwd ?? mkdtempSync(join(tmpdir(), 'petstore-service-'))
  const child = spawn(
    opts.command ?? process.execPath,
    opts.command ? (opts.args ?? []) : [MAIN, ...(opts.args ?? ['serve'])],
    {
      cwd,
      env: {
        ...baseEnv(),
        PORT: '0',
        HOST: '127.0.0.1',
        PETSTORE_DATABASE_URL: `sqlite:${join(cwd, 'petstore.db')}`,
        PETSTORE_METRICS_PORT: 'off',
        PETSTORE_DRAIN_DELAY: '0s',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: opts.detached,
      timeout: opts.timeout,
    },
  )
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk
  })
  const exited = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  )
  const logLines = () => parseLogLines(out)
  const killAll = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    const others = new Set([...listeningWorkerPids(logLines()), ...logLines().map((l) => l.pid)])
    others.delete(child.pid!)
    for (const pid of others) if (isRunning(pid)) process.kill(pid, 'SIGKILL')
    await exited
  }
  // The processes first, then the directory they may still be writing in.
  t.after(async () => {
    await killAll()
    if (opts.cwd === undefined) rmSync(cwd, { recursive: true, force: true })
  })
  const waitFor = (check: RegExp | ((stdout: string) => boolean)) =>
    new Promise<void>((resolve, reject) => {
      let settled = false
      const onData = () => {
        if (settled || !(check instanceof RegExp ? check.test(out) : check(out))) return
        settled = true
        child.stdout!.off('data', onData)
        resolve()
      }
      child.stdout!.on('data', onData)
      onData()
      // Through `exited`, so a wait begun after the exit still ends, with all output read.
      void exited.then(() => {
        onData()
        if (settled) return
        settled = true
        child.stdout!.off('data', onData)
        reject(new Error(`service ended before ${check}\nstdout:\n${out}\nstderr:\n${err}`))
      })
    })
  return {
    child,
    pid: child.pid!,
    cwd,
    stdout: () => out,
    stderr: () => err,
    logLines,
    waitFor,
    exited,
    stop: (signal = 'SIGTERM') => {
      child.kill(signal)
      return exited
    },
    killAll,
  }
}

/**
 * Waits for the line saying where `service` listens, and for the metrics line too unless metrics
 * are off (log lines may fall between the two); rejects if it ends first.
 */
export async function listening(
  service: ServiceProcess,
  env: Record<string, string> = {},
): Promise<Pick<StartedService, 'origin' | 'port' | 'metricsUrl'>> {
  const metricsOff = (env.PETSTORE_METRICS_PORT ?? 'off') === 'off'
  await service.waitFor((out) => LISTENING_LINE.test(out) && (metricsOff || METRICS_ON.test(out)))
  const origin = LISTENING_LINE.exec(service.stdout())![1]!
  const metricsUrl = metricsOff ? null : METRICS_ON.exec(service.stdout())![1]!
  return { origin, port: Number(new URL(origin).port), metricsUrl }
}

/** `spawnService`, resolving once the service listens. */
export async function startService(
  t: TestContext,
  opts: ServiceOptions = {},
): Promise<StartedService> {
  const service = spawnService(t, opts)
  return { ...service, ...(await listening(service, opts.env)) }
}
