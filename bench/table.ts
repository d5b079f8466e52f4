// Summarises the runs of `npm run bench` as a markdown table.
import type { WrkResult } from './wrk.js'

export interface OpSamples {
  name: string
  /** The baseline runs this operation is compared with (one per round, run just before the others). */
  baseline: WrkResult[]
  /** Each service's runs of this operation, one per round, by the service's label ("SQLite"). */
  services: Record<string, WrkResult[]>
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

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** The median over the rounds of a figure of each round's pair of runs. */
const pairedMedian = (a: WrkResult[], b: WrkResult[], f: (a: WrkResult, b: WrkResult) => number) =>
  median(a.map((x, i) => f(x, b[i]!)))

/**
 * The median over the rounds of each round's service req/s ÷ the same round's baseline req/s, and
 * the lowest and highest of them: a host slower in one round moves both sides of its ratio alike.
 */
export function ratioCell(runs: WrkResult[], baseline: WrkResult[]): string {
  const ratios = runs.map((r, i) => r.rps / baseline[i]!.rps)
  return `${fmt(median(ratios), 2)} (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})`
}

const errorsOf = (op: OpSamples) =>
  [op.baseline, ...Object.values(op.services)]
    .flat()
    .reduce((s, r) => s + r.errors, op.warmupErrors)

/** One row per operation, a group of columns per service: `labels` in their order. */
export function table(
  ops: OpSamples[],
  labels: string[],
  baselineNames: Map<string, string>,
): string {
  const rows = [
    '| operation | baseline | baseline req/s | baseline CPU µs/req |' +
      labels
        .map(
          (l) =>
            ` ${l} req/s | ${l} ratio (range) | ${l} p50 / p99 ms | ${l} CPU µs/req | ${l} CPU ratio |`,
        )
        .join('') +
      ' errors |',
    `| --- | --- | ---: | ---: |${' ---: | ---: | ---: | ---: | ---: |'.repeat(labels.length)} ---: |`,
  ]
  for (const op of ops) {
    const cells = labels.map((l) => {
      const runs = op.services[l]!
      return (
        ` ${fmt(median(runs.map((r) => r.rps)))} | ${ratioCell(runs, op.baseline)} | ` +
        `${fmt(median(runs.map((r) => r.p50Ms)), 2)} / ${fmt(median(runs.map((r) => r.p99Ms)), 2)} | ` +
        `${fmt(median(runs.map(cpuUsPerRequest)), 1)} | ` +
        `${fmt(
          pairedMedian(runs, op.baseline, (s, b) => cpuUsPerRequest(b) / cpuUsPerRequest(s)),
          2,
        )} |`
      )
    })
    rows.push(
      `| ${op.name} | ${baselineNames.get(op.name) ?? ''} | ${fmt(median(op.baseline.map((r) => r.rps)))} | ` +
        `${fmt(median(op.baseline.map(cpuUsPerRequest)), 1)} |${cells.join('')} ${errorsOf(op)} |`,
    )
  }
  return rows.join('\n')
}

/**
 * Each operation on the service labelled `big` against the same operation on the service labelled
 * `ref` (the same store, a smaller catalogue), run right before it in each round. The slowdown is
 * the median of the rounds' own ratios.
 */
export function scaleTable(
  ops: OpSamples[],
  big: string,
  ref: string,
  pets: number,
  reference: number,
): string {
  const large = pets.toLocaleString('en-US')
  const small = reference.toLocaleString('en-US')
  const rows = [
    `| operation | req/s at ${small} | ratio at ${small} | req/s at ${large} | ratio at ${large} | slowdown (${small} ÷ ${large} req/s) | CPU µs/req at ${small} | CPU µs/req at ${large} | CPU slowdown |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const op of ops) {
    const refRuns = op.services[ref]!
    const runs = op.services[big]!
    rows.push(
      `| ${op.name} | ${fmt(median(refRuns.map((r) => r.rps)))} | ${ratioCell(refRuns, op.baseline)} | ` +
        `${fmt(median(runs.map((r) => r.rps)))} | ${ratioCell(runs, op.baseline)} | ` +
        `${fmt(
          pairedMedian(refRuns, runs, (r, s) => r.rps / s.rps),
          2,
        )}x | ` +
        `${fmt(median(refRuns.map(cpuUsPerRequest)), 1)} | ` +
        `${fmt(median(runs.map(cpuUsPerRequest)), 1)} | ` +
        `${fmt(
          pairedMedian(refRuns, runs, (r, s) => cpuUsPerRequest(s) / cpuUsPerRequest(r)),
          2,
        )}x |`,
    )
  }
  return rows.join('\n')
}

/**
 * Each setup against `ref` (the same store's default setup) measured in the same rounds: the
 * median of the rounds' own req/s ratios, and of their CPU µs/req ratios (ref ÷ setup).
 */
export function setupTable(ops: OpSamples[], ref: string, labels: string[]): string {
  const rows = [
    `| operation |${labels.map((l) => ` ${l} ÷ ${ref} req/s (range) | CPU ratio |`).join('')}`,
    `| --- |${' ---: | ---: |'.repeat(labels.length)}`,
  ]
  for (const op of ops) {
    const refRuns = op.services[ref]!
    const cells = labels.map((l) => {
      const runs = op.services[l]!
      const cpu = pairedMedian(runs, refRuns, (s, r) => cpuUsPerRequest(r) / cpuUsPerRequest(s))
      return ` ${ratioCell(runs, refRuns)} | ${fmt(cpu, 2)} |`
    })
    rows.push(`| ${op.name} |${cells.join('')}`)
  }
  return rows.join('\n')
}

export const pct = (share: number) => `${Math.round(share * 100)}%`

/** Every measured run, so a reader can see the spread behind each median. */
export function perRound(ops: OpSamples[], labels: string[]): string {
  const rows = [
    '| operation | round | baseline req/s | baseline CPU | baseline µs/req |' +
      labels
        .map((l) => ` ${l} req/s | ${l} CPU | ${l} µs/req | ${l} ratio | ${l} p99 ms |`)
        .join(''),
    `| --- | ---: | ---: | ---: | ---: |${' ---: | ---: | ---: | ---: | ---: |'.repeat(labels.length)}`,
  ]
  const cells = (r: WrkResult) =>
    ` ${fmt(r.rps)} | ${pct(r.serverCpu)} | ${fmt(cpuUsPerRequest(r), 1)} |`
  for (const op of ops) {
    op.baseline.forEach((b, i) => {
      rows.push(
        `| ${op.name} | ${i + 1} |${cells(b)}` +
          labels
            .map((l) => {
              const r = op.services[l]![i]!
              return `${cells(r)} ${fmt(r.rps / b.rps, 2)} | ${fmt(r.p99Ms, 2)} |`
            })
            .join(''),
      )
    })
  }
  return rows.join('\n')
}
