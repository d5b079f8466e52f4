// The host the bench ran on: what it is, what it runs, and how busy it was meanwhile.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { ROOT } from './service.js'

/** The machine's CPU time so far, in ticks: all of it, and the part the host stole. */
export interface CpuStat {
  total: number
  steal: number
}

/** From /proc/stat's `cpu` line. */
export function cpuStat(): CpuStat {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/)
  const ticks = fields.slice(1, 9).map(Number)
  return { total: ticks.reduce((a, b) => a + b, 0), steal: ticks[7] ?? 0 }
}

export function stealShare(before: CpuStat, after: CpuStat): number {
  const total = after.total - before.total
  return total > 0 ? (after.steal - before.steal) / total : 0
}

/** The load average over 1, 5 and 15 minutes. */
export const loadAverage = (): string =>
  readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

/** The CPU model and count, the Node version and the commit measured (marked if src/ differs). */
export function machine(): string {
  const git = (args: string[]) => execFileSync('git', args, { cwd: ROOT }).toString().trim()
  const dirty = git(['status', '--porcelain', '--', 'src']) !== ''
  return (
    `${cpus()[0]?.model ?? 'unknown CPU'} x${cpus().length}, Node ${process.version}, ` +
    `commit ${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ' (src modified)' : ''}`
  )
}
