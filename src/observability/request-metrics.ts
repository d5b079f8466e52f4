// The request count and latency histogram, recorded with plain arithmetic on every request (not
// prom-client's types, which hash the labels per call) and exposed exactly as those types would.
import type { Metric, Registry } from 'prom-client'

interface Labels {
  operation: string
  method: string
  status: string
}

interface Series {
  labels: Labels
  count: number
  sum: number
  /** Observations per bucket, not cumulative; the last slot is above the largest bound. */
  perBucket: number[]
}

interface Value {
  labels: Record<string, string | number>
  value: number
  metricName?: string
}

/** What a prom-client Registry reads of a metric: its metadata and its current values. */
interface ScrapedMetric {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: Value[] }>
  reset(): void
}

export class RequestMetrics {
  private readonly series = new Map<string, Series>()
  /** The series the previous record went to, with its labels. */
  private last: { operation: string; method: string; status: number; series: Series } | null = null

  constructor(
    private readonly bounds: readonly number[],
    names: { count: string; duration: string },
    help: { count: string; duration: string },
    registry: Registry,
  ) {
    registry.registerMetric(
      this.metric(names.count, help.count, 'counter', () =>
        [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.count })),
      ),
    )
    registry.registerMetric(
      this.metric(names.duration, help.duration, 'histogram', () =>
        [...this.series.values()].flatMap((s) => this.histogramValues(names.duration, s)),
      ),
    )
  }

  record(operation: string, method: string, status: number, seconds: number): void {
    // Under load most requests repeat the previous one's labels: comparing them (usually the same
    // constant strings) skips building and hashing the key.
    const last = this.last
    const s =
      last !== null &&
      last.status === status &&
      last.operation === operation &&
      last.method === method
        ? last.series
        : this.seriesOf(operation, method, status)
    s.count++
    s.sum += seconds
    let i = 0
    while (i < this.bounds.length && seconds > this.bounds[i]!) i++
    s.perBucket[i]!++
  }

  private seriesOf(operation: string, method: string, status: number): Series {
    const key = `${operation} ${method} ${status}`
    let s = this.series.get(key)
    if (s === undefined) {
      s = {
        labels: { operation, method, status: String(status) },
        count: 0,
        sum: 0,
        perBucket: new Array<number>(this.bounds.length + 1).fill(0),
      }
      this.series.set(key, s)
    }
    this.last = { operation, method, status, series: s }
    return s
  }

  private histogramValues(name: string, s: Series): Value[] {
    const values: Value[] = []
    let cumulative = 0
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += s.perBucket[i]!
      values.push({
        labels: { le: this.bounds[i]!, ...s.labels },
        value: cumulative,
        metricName: `${name}_bucket`,
      })
    }
    values.push({
      labels: { le: '+Inf', ...s.labels },
      value: s.count,
      metricName: `${name}_bucket`,
    })
    values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${name}_sum` })
    values.push({ labels: { ...s.labels }, value: s.count, metricName: `${name}_count` })
    return values
  }

  private metric(
    name: string,
    help: string,
    type: 'counter' | 'histogram',
    values: () => Value[],
  ): Metric {
    const metric: ScrapedMetric = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => {
        this.series.clear()
        this.last = null
      },
    }
    return metric as unknown as Metric
  }
}
