// The primary's watch over its workers: one start-up line once all listen, a new worker for one
// that dies, and on SIGTERM or SIGINT a drain of every worker before the primary exits.
import cluster, { type Worker } from 'node:cluster'
import type { MetricsServer } from '../observability/metrics-server.js'

/** A worker that dies sooner than this after its start was failing: the next wait doubles. */
const STABLE_AFTER_MS = 10_000
const FIRST_RESTART_DELAY_MS = 100
const MAX_RESTART_DELAY_MS = 5_000

/** What a worker tells the primary once its listener is open. */
export interface ListeningMessage {
  type: 'petstore:listening'
  address: string
  storeKind: string
}

function isListeningMessage(message: unknown): message is ListeningMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === 'petstore:listening'
  )
}

/** The primary's own log: a line in the shape of the workers'. */
export type Log = (
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace',
  fields: Record<string, unknown>,
  msg: string,
) => void

/** Runs `count` workers until a signal, then has each drain and exits with the overall status. */
export class Supervisor {
  private phase: 'starting' | 'running' | 'stopping' = 'starting'
  private readonly slots: (Worker | null)[]
  private readonly slotOf = new Map<Worker, number>()
  private readonly forkedAt = new Map<Worker, number>()
  private readonly listening = new Set<Worker>()
  private readonly restartTimers = new Set<NodeJS.Timeout>()
  /** Deaths in a row of each slot's workers, each soon after its start. */
  private readonly quickDeaths: number[]
  private stopSignal: NodeJS.Signals = 'SIGTERM'
  private exitCode = 0

  constructor(
    private readonly log: Log,
    private readonly count: number,
    private readonly out: NodeJS.WritableStream,
    private readonly metricsServer: MetricsServer | null,
  ) {
    this.slots = Array.from({ length: count }, () => null)
    this.quickDeaths = Array.from({ length: count }, () => 0)
  }

  start(): void {
    // Round robin in the primary spreads connections evenly; left to the kernel, a few busy
    // workers would take most of them.
    cluster.schedulingPolicy = cluster.SCHED_RR
    const onSignal = (signal: NodeJS.Signals) => {
      if (this.phase === 'stopping') return
      this.log('info', { signal, workers: this.count }, 'stopping workers')
      this.stop(signal)
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    for (let slot = 0; slot < this.count; slot++) this.fork(slot)
  }

  private fork(slot: number): void {
    const worker = cluster.fork()
    this.slots[slot] = worker
    this.slotOf.set(worker, slot)
    this.forkedAt.set(worker, Date.now())
    worker.on('message', (message: unknown) => {
      if (isListeningMessage(message)) this.onListening(worker, message)
    })
    worker.on('exit', (code: number | null, signal: NodeJS.Signals | null) =>
      this.onExit(worker, code, signal),
    )
    worker.on('error', (err: Error) =>
      this.log(
        'warn',
        { worker: slot + 1, workerPid: worker.process.pid, err: err.message },
        'worker channel error',
      ),
    )
  }

  private onListening(worker: Worker, message: ListeningMessage): void {
    this.listening.add(worker)
    const slot = this.slotOf.get(worker)!
    this.log('info', { worker: slot + 1, workerPid: worker.process.pid }, 'worker listening')
    if (this.phase !== 'starting' || this.listening.size < this.count) return
    this.phase = 'running'
    // One line for all workers, in the single process's form, so scripts can wait for it.
    this.out.write(
      `petstore listening on ${message.address} (store: ${message.storeKind}, workers: ${this.count})\n`,
    )
    if (this.metricsServer) this.out.write(`petstore metrics on ${this.metricsServer.url}\n`)
  }

  private onExit(worker: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    const slot = this.slotOf.get(worker)!
    const wasListening = this.listening.delete(worker)
    const lived = Date.now() - this.forkedAt.get(worker)!
    this.slotOf.delete(worker)
    this.forkedAt.delete(worker)
    if (this.slots[slot] === worker) this.slots[slot] = null
    const fields = { worker: slot + 1, workerPid: worker.process.pid, code, signal }

    if (this.phase === 'stopping') {
      // One still starting may end by the forwarded signal itself: it had nothing to drain.
      const clean = code === 0 || (!wasListening && signal === this.stopSignal)
      if (!clean) {
        this.log(
          'error',
          fields,
          wasListening ? 'worker failed to stop cleanly' : 'worker failed to start',
        )
        this.exitCode ||= 1
      }
      this.exitIfAllStopped()
      return
    }
    if (this.phase === 'starting') {
      // A worker that cannot start (port taken, database refused) will not fare better on retry:
      // stop like a single process would, with its exit status.
      this.log('error', fields, 'worker failed to start; stopping the others')
      this.exitCode = code !== null && code !== 0 ? code : 1
      this.stop('SIGINT')
      return
    }
    this.restartLater(slot, lived, fields)
  }

  /** Forks a new worker in the slot, later the more often its workers died soon after starting. */
  private restartLater(slot: number, lived: number, fields: Record<string, unknown>): void {
    this.quickDeaths[slot] = lived < STABLE_AFTER_MS ? this.quickDeaths[slot]! + 1 : 0
    const delayMs = Math.min(
      FIRST_RESTART_DELAY_MS * 2 ** Math.max(0, this.quickDeaths[slot]! - 1),
      MAX_RESTART_DELAY_MS,
    )
    this.log(
      'warn',
      { ...fields, restartInMs: delayMs },
      'worker exited unexpectedly; starting another',
    )
    const timer = setTimeout(() => {
      this.restartTimers.delete(timer)
      this.fork(slot)
    }, delayMs)
    this.restartTimers.add(timer)
  }

  /** Forwards the signal to every worker; each drains as a single process would. */
  private stop(signal: NodeJS.Signals): void {
    this.phase = 'stopping'
    this.stopSignal = signal
    for (const timer of this.restartTimers) clearTimeout(timer)
    this.restartTimers.clear()
    for (const worker of this.slots) {
      if (worker !== null && !worker.isDead()) worker.process.kill(signal)
    }
    this.exitIfAllStopped()
  }

  private exitIfAllStopped(): void {
    if (this.slots.some((worker) => worker !== null)) return
    this.log(
      this.exitCode === 0 ? 'info' : 'error',
      { exitCode: this.exitCode },
      'all workers stopped',
    )
    const exit = () => process.exit(this.exitCode)
    if (this.metricsServer) this.metricsServer.close().then(exit, exit)
    else exit()
  }
}
