// Summarises the runs of `npm run bench` as a markdown table.
import type { WrkResult } from './wrk.js'

export interface OpSamples {
  name: string
  /** The baseline runs this operation is compared with (one per round, run just before it). */
  baseline: WrkResult[]
  service: WrkResult[]
  /** The same operation on the reference service (a smaller catalogue), when the bench runs one. */
  reference: WrkResult[]
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

/** The median over the rounds of a figure of each round's pair of runs. */
const pairedMedian = (a: WrkResult[], b: WrkResult[], f: (a: WrkResult, b: WrkResult) => number) =>
  median(a.map((x, i) => f(x, b[i]!)))

/**
 * Each operation on the service against the same operation on the reference service, run right
 * after it in each round. The slowdown is the median of the rounds' own ratios, so a host that is
 * slower in one round than in the next moves both sides of that round's ratio alike.
 */
export function scaleTable(ops: OpSamples[], pets: number, reference: number): string {
  const big = pets.toLocaleString('en-US')
  const ref = reference.toLocaleString('en-US')
  const rows = [
    `| operation | req/s at ${ref} | ratio at ${ref} | req/s at ${big} | ratio at ${big} | slowdown (${ref} ÷ ${big} req/s) | CPU µs/req at ${ref} | CPU µs/req at ${big} | CPU slowdown |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const op of ops) {
    const base = median(op.baseline.map((r) => r.rps))
    const refRps = median(op.reference.map((r) => r.rps))
    const rps = median(op.service.map((r) => r.rps))
    rows.push(
      `| ${op.name} | ${fmt(refRps)} | ${fmt(refRps / base, 2)} | ${fmt(rps)} | ${fmt(rps / base, 2)} | ` +
        `${fmt(
          pairedMedian(op.reference, op.service, (r, s) => r.rps / s.rps),
          2,
        )}x | ` +
        `${fmt(median(op.reference.map(cpuUsPerRequest)), 1)} | ` +
        `${fmt(median(op.service.map(cpuUsPerRequest)), 1)} | ` +
        `${fmt(
          pairedMedian(op.reference, op.service, (r, s) => cpuUsPerRequest(s) / cpuUsPerRequest(r)),
          2,
        )}x |`,
    )
  }
  return rows.join('\n')
}

const pct = (share: number) => `${Math.round(share * 100)}%`

/** Every measured run, so a reader can see the spread behind each median. */
export function perRound(ops: OpSamples[]): string {
  const withReference = ops.some((op) => op.reference.length > 0)
  const rows = [
    '| operation | round | baseline req/s | baseline CPU | baseline µs/req |' +
      (withReference ? ' reference req/s | reference CPU | reference µs/req |' : '') +
      ' service req/s | service CPU | service µs/req | service p99 ms |',
    `| --- | ---: | ---: | ---: | ---: |${withReference ? ' ---: | ---: | ---: |' : ''} ---: | ---: | ---: | ---: |`,
  ]
  const cells = (r: WrkResult | undefined) =>
    `${fmt(r?.rps ?? 0)} | ${pct(r?.serverCpu ?? 0)} | ${fmt(r ? cpuUsPerRequest(r) : 0, 1)} |`
  for (const op of ops) {
    op.service.forEach((s, i) => {
      rows.push(
        `| ${op.name} | ${i + 1} | ${cells(op.baseline[i])}` +
          (withReference ? ` ${cells(op.reference[i])}` : '') +
          ` ${cells(s)} ${fmt(s.p99Ms, 2)} |`,
      )
    })
  }
  return rows.join('\n')
}
