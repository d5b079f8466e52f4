// Writer threads that die for real when a test arms them, and wait at a gate the test opens.
import type { TestContext } from 'node:test'
import type { Worker } from 'node:worker_threads'
import { type SpawnWriter, writerSpawner } from '../../src/storage/sqlite/writer.js'

/**
 * Set in `armed`: the thread dies at its next batch of creates, before or after committing it, or
 * after committing its next idempotency claim.
 */
export const DIE_BEFORE_COMMIT = 1
export const DIE_AFTER_COMMIT = 2
export const DIE_AFTER_CLAIM = 3

export interface WriterThread {
  worker: Worker
  exited: Promise<unknown>
  hasExited: boolean
  /** The thread performs no request while this holds 0 (openGate). */
  gate: Int32Array
}

const shared = () => new Int32Array(new SharedArrayBuffer(4))

export function openGate(gate: Int32Array): void {
  Atomics.store(gate, 0, 1)
  Atomics.notify(gate, 0)
}

/**
 * A SpawnWriter of dying-writer-thread.ts. The first thread's gate is open; each later one's too
 * when `open`, else the test opens it. Call it before opening the store: after `t` every gate is
 * opened before the store's close waits for its thread.
 */
export function dyingWriters(t: TestContext, opts: { open: boolean }) {
  const spawnDying = writerSpawner(new URL('./dying-writer-thread.ts', import.meta.url))
  const armed = shared()
  const threads: WriterThread[] = []
  let started: ((thread: WriterThread) => void) | null = null
  t.after(() => {
    for (const thread of threads) openGate(thread.gate)
  })
  const spawn: SpawnWriter = (data) => {
    const gate = shared()
    if (opts.open || threads.length === 0) openGate(gate)
    const worker = spawnDying({ ...data, armed, gate } as typeof data)
    const thread: WriterThread = {
      worker,
      exited: new Promise((resolve) => worker.once('exit', resolve)),
      hasExited: false,
      gate,
    }
    worker.once('exit', () => {
      thread.hasExited = true
    })
    threads.push(thread)
    started?.(thread)
    return worker
  }
  return {
    spawn,
    threads,
    /** The next batch of creates (or claim) kills its thread, once. */
    arm: (death: typeof DIE_BEFORE_COMMIT | typeof DIE_AFTER_COMMIT | typeof DIE_AFTER_CLAIM) =>
      Atomics.store(armed, 0, death),
    /** Resolves with the next thread started. */
    nextThread: () =>
      new Promise<WriterThread>((resolve) => {
        started = resolve
      }),
  }
}
