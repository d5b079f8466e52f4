// Summarises the runs of `npm run bench` as a markdown table.
import type { WrkResult } from './wrk.js'

export interface OpSamples {
  name: string
  /** The baseline runs this operation is compared with (one per round, run just before it). */
  baseline: WrkResult[]
  service: WrkResult[]
  /** Errors in the warm-up runs, which are otherwise not reported. */
  warmupErrors: number
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/**
 * CPU time (user + system, all threads) a server spent per request in a run, in µs. Unlike req/s
 * it does not fall when the server gets less of its core (other work, a host that steals time):
 * it shows the cost of a request, not how much of the core was left to pay it.
 */
export const cpuUsPerRequest = (r: WrkResult): number =>
  r.rps > 0 ? (r.serverCpu * 1e6) / r.rps : 0

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

export function table(ops: OpSamples[], baselineNames: Map<string, string>): string {
  const rows = [
    '| operation | req/s (median) | p50 ms | p99 ms | errors | baseline | baseline req/s | ratio | CPU µs/req | baseline CPU µs/req | CPU ratio |',
    '| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const op of ops) {
    const rps = median(op.service.map((r) => r.rps))
    const base = median(op.baseline.map((r) => r.rps))
    const errors = [...op.service, ...op.baseline].reduce((s, r) => s + r.errors, op.warmupErrors)
    const cpu = median(op.service.map(cpuUsPerRequest))
    const baseCpu = median(op.baseline.map(cpuUsPerRequest))
    rows.push(
      `| ${op.name} | ${fmt(rps)} | ${fmt(median(op.service.map((r) => r.p50Ms)), 2)} | ` +
        `${fmt(median(op.service.map((r) => r.p99Ms)), 2)} | ${errors} | ` +
        `${baselineNames.get(op.name) ?? ''} | ${fmt(base)} | ${fmt(rps / base, 2)} | ` +
        `${fmt(cpu, 1)} | ${fmt(baseCpu, 1)} | ${fmt(baseCpu / cpu, 2)} |`,
    )
  }
  return rows.join('\n')
}

const pct = (share: number) => `${Math.round(share * 100)}%`

/** Every measured run, so a reader can see the spread behind each median. */
export function perRound(ops: OpSamples[]): string {
  const rows = [
    '| operation | round | baseline req/s | baseline CPU | baseline µs/req | service req/s | service CPU | service µs/req | service p99 ms |',
  ]
  rows.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const op of ops) {
    op.service.forEach((s, i) => {
      const b = op.baseline[i]
      rows.push(
        `| ${op.name} | ${i + 1} | ${fmt(b?.rps ?? 0)} | ${pct(b?.serverCpu ?? 0)} | ` +
          `${fmt(b ? cpuUsPerRequest(b) : 0, 1)} | ${fmt(s.rps)} | ${pct(s.serverCpu)} | ` +
          `${fmt(cpuUsPerRequest(s), 1)} | ${fmt(s.p99Ms, 2)} |`,
      )
    })
  }
  return rows.join('\n')
}
