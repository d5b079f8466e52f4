// `petstore serve --workers N`: N processes serving the API on one port through node:cluster. The
// primary prepares the store once, forks the workers (serve.ts runs each) and watches them: one
// start-up line once all listen, a new worker for one that dies, a drain of all on SIGTERM or
// SIGINT. Connections go to the workers in turn (cluster's round robin); never to the primary.
import cluster, { type Worker } from 'node:cluster'
import { pino } from 'pino'
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client'
import type { Config } from '../config.js'
import { loadTls } from '../http/tls.js'
import { LogDestination } from '../observability/log-destination.js'
import { loggerOptions } from '../observability/logging.js'
import { startMetricsServer } from '../observability/metrics-server.js'
import { clockFor, ensureBootstrapKey, LISTENING_BANNER, METRICS_BANNER } from '../server.js'
import { openStore } from '../storage/open-store.js'

export const MAX_WORKERS = 64
/** A worker that dies sooner than this after its start was failing: the next wait doubles. */
const STABLE_AFTER_MS = 10_000
const FIRST_RESTART_DELAY_MS = 100
const MAX_RESTART_DELAY_MS = 5_000

/** The primary's metrics: each scrape asks every worker for its figures and sums them. */
class ClusterRegistry extends AggregatorRegistry<PrometheusContentType> {
  override metrics(): Promise<string> {
    return this.clusterMetrics()
  }
}

/** Prepares the store, then runs `count` workers until a signal; exits with the overall status. */
export async function runPrimary(cfg: Config, count: number): Promise<void> {
  const out = process.stdout
  // Everything that can be wrong with the settings stops the start here, before any fork.
  loadTls(cfg)
  const { store } = await openStore(cfg, (err) =>
    process.stderr.write(`petstore: database connection error: ${err.message}\n`),
  )
  try {
    await ensureBootstrapKey(cfg, store, clockFor(cfg), out)
  } finally {
    await store.close()
  }
  const metricsServer =
    cfg.metricsPort === null
      ? null
      : await startMetricsServer(new ClusterRegistry(), cfg.metricsHost, cfg.metricsPort)
  // The primary's own lines, in the shape and format of the workers', but each written at once
  // (not at the end of the turn), so that they come before what the workers log in answer.
  const { stream, ...options } = loggerOptions(cfg)
  const log = pino(options, stream instanceof LogDestination ? process.stdout : stream)
  const primary = new Primary(count, log, metricsServer, (address) => {
    // One line for all workers, in the single process's form, so scripts can wait for it.
    out.write(`${LISTENING_BANNER} ${address} (store: ${store.kind}, workers: ${count})\n`)
    if (metricsServer) out.write(`${METRICS_BANNER} ${metricsServer.url}\n`)
  })
  const onSignal = (signal: NodeJS.Signals) => primary.signalled(signal)
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  for (let slot = 0; slot < count; slot++) primary.fork(slot)
}

/** The workers' watch: their start, their replacement, their drain, and the primary's exit. */
class Primary {
  private readonly live = new Map<number, Worker>()
  /** Deaths in a row of each slot's workers, each soon after its start. */
  private readonly quickDeaths: number[]
  private phase: 'starting' | 'running' | 'stopping' = 'starting'
  private stopSignal: NodeJS.Signals = 'SIGTERM'
  private listening = 0
  private exitCode = 0

  constructor(
    private readonly count: number,
    private readonly log: pino.Logger,
    private readonly metricsServer: { close(): Promise<void> } | null,
    private readonly allListening: (address: string) => void,
  ) {
    this.quickDeaths = new Array<number>(count).fill(0)
  }

  signalled(signal: NodeJS.Signals): void {
    if (this.phase === 'stopping') return
    this.log.info({ signal, workers: this.count }, 'stopping workers')
    this.stop(signal)
  }

  fork(slot: number): void {
    const worker = cluster.fork()
    const forkedAt = Date.now()
    const fields = { worker: slot + 1, workerPid: worker.process.pid }
    let isListening = false
    this.live.set(slot, worker)
    worker.on('error', (err: Error) =>
      this.log.warn({ ...fields, err: err.message }, 'worker channel error'),
    )
    worker.on('message', (message: { listening?: unknown } | null) => {
      if (typeof message?.listening !== 'string') return
      isListening = true
      this.log.info(fields, 'worker listening')
      if (this.phase !== 'starting' || ++this.listening < this.count) return
      this.phase = 'running'
      this.allListening(message.listening)
    })
    worker.on('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      this.live.delete(slot)
      this.exited(slot, { ...fields, code, signal }, Date.now() - forkedAt, isListening)
    })
  }

  private exited(
    slot: number,
    exited: { code: number | null; signal: NodeJS.Signals | null },
    livedMs: number,
    wasListening: boolean,
  ): void {
    const { code, signal } = exited
    if (this.phase === 'running') {
      this.quickDeaths[slot] = livedMs < STABLE_AFTER_MS ? this.quickDeaths[slot]! + 1 : 0
      const wait = FIRST_RESTART_DELAY_MS * 2 ** Math.max(0, this.quickDeaths[slot]! - 1)
      const restartInMs = Math.min(wait, MAX_RESTART_DELAY_MS)
      this.log.warn({ ...exited, restartInMs }, 'worker exited unexpectedly; starting another')
      setTimeout(() => {
        if (this.phase === 'running') this.fork(slot)
      }, restartInMs)
    } else if (this.phase === 'starting') {
      // A worker that cannot start (port taken, database refused) will not fare better on retry:
      // stop like a single process would, with its exit status.
      this.log.error(exited, 'worker failed to start; stopping the others')
      this.exitCode = code || 1
      this.stop('SIGINT')
    } else {
      // One still starting may end by the forwarded signal itself: it had nothing to drain.
      if (code !== 0 && (wasListening || signal !== this.stopSignal)) {
        const message = wasListening ? 'worker failed to stop cleanly' : 'worker failed to start'
        this.log.error(exited, message)
        this.exitCode ||= 1
      }
      this.exitIfAllStopped()
    }
  }

  /** Forwards the signal to every worker; each drains as a single process would. */
  private stop(signal: NodeJS.Signals): void {
    this.phase = 'stopping'
    this.stopSignal = signal
    for (const worker of this.live.values()) worker.process.kill(signal)
    this.exitIfAllStopped()
  }

  private exitIfAllStopped(): void {
    if (this.live.size > 0) return
    const { exitCode } = this
    this.log[exitCode === 0 ? 'info' : 'error']({ exitCode }, 'all workers stopped')
    const exit = () => process.exit(exitCode)
    void Promise.resolve(this.metricsServer?.close()).then(exit, exit)
  }
}
