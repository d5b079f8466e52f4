// Runs wrk (pinned to one core with taskset) and reads its report.
import { spawn } from 'node:child_process'

export interface WrkResult {
  rps: number
  p50Ms: number
  p99Ms: number
  /** Responses other than 2xx/3xx plus socket errors (connect, read, write, timeout); 1 for a run with no response at all. */
  errors: number
  requests: number
  /** wrk's own error lines, when there were errors. */
  errorDetail: string
  /** Share of one core the server used during the run (filled in by the caller). */
  serverCpu: number
}

export interface WrkRun {
  url: string
  seconds: number
  connections: number
  cpu: number
  headers: string[]
  script?: string
}

/** Runs a command to its end and resolves with its stdout; a non-zero exit rejects with stderr. */
export function runCommand(
  cmd: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code === 0) resolve(out)
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}${out}`))
    })
  })
}

function toMs(value: string, unit: string): number {
  const n = Number(value)
  if (unit === 'us') return n / 1000
  if (unit === 'ms') return n
  if (unit === 's') return n * 1000
  if (unit === 'm') return n * 60_000
  throw new Error(`unknown latency unit ${unit}`)
}

export function parseWrk(out: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)
  const p50 = /^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out)
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out)
  const total = /(\d+) requests in/.exec(out)
  if (!rps || !p50 || !p99 || !total) throw new Error(`cannot read the wrk report:\n${out}`)
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0
  // A run in which no response came back at all reports no error lines; it is a failure anyway.
  const silent = Number(total[1]) === 0 ? 'no response in the whole run' : undefined
  return {
    rps: Number(rps[1]),
    p50Ms: toMs(p50[1]!, p50[2]!),
    p99Ms: toMs(p99[1]!, p99[2]!),
    errors: Number(non2xx?.[1] ?? 0) + socketErrors + (silent ? 1 : 0),
    requests: Number(total[1]),
    serverCpu: 0,
    errorDetail: [non2xx?.[0], socket?.[0], silent].filter((s) => s !== undefined).join('; '),
  }
}

export async function wrk(r: WrkRun): Promise<WrkResult> {
  const args = ['-c', String(r.cpu), 'wrk', '-t', '1', '-c', String(r.connections)]
  args.push('-d', `${r.seconds}s`, '--latency', '--timeout', '5s')
  for (const h of r.headers) args.push('-H', h)
  if (r.script) args.push('-s', r.script)
  args.push(r.url)
  return parseWrk(await runCommand('taskset', args))
}
