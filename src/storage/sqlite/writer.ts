// Where the SQLite store's writes run: on the writer thread (writer-thread.ts) for a file, each
// settled once the thread made it durable; in memory, on the main connection.
import { Worker } from 'node:worker_threads'
import { WRITER_DIED } from './faults.js'
import type { WriteRequest, WriterReply, WriterRequest } from './writer-messages.js'
import type { WriterData } from './writer-thread.js'
import type { SqliteWrites, WriteAnswer, WriteArgs, WriteName } from './writes.js'

export interface StoreWriter {
  /** Whether the writer has a connection of its own open (the thread's), for the store's stats. */
  readonly running: boolean
  /** Commits made on the main connection, which its PRAGMA data_version does not count. */
  readonly ownCommits: number
  write<K extends WriteName>(
    type: K,
    args: WriteArgs<K>,
    transfer?: ArrayBuffer[],
  ): Promise<WriteAnswer<K>>
  /** Call once no write is in flight. */
  close(): Promise<void>
}

/** The writes on the main connection, for an in-memory database, which no other thread can open. */
export class LocalWriter implements StoreWriter {
  readonly running = false
  ownCommits = 0

  constructor(private readonly writes: SqliteWrites) {}

  async write<K extends WriteName>(type: K, args: WriteArgs<K>): Promise<WriteAnswer<K>> {
    const value = (this.writes[type] as (...args: unknown[]) => WriteAnswer<K>)(...args)
    this.ownCommits++
    return value
  }

  async close(): Promise<void> {}
}

/** One writer thread and the requests it holds, which its death fails. */
interface Thread {
  worker: Worker
  waiting: Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>
}

/** Starts a writer thread; another entry only in tests, which make a thread die. */
export type SpawnWriter = (data: WriterData) => Worker

/** A SpawnWriter of the thread whose entry is `entry` (a .js module, or .ts when run from source). */
export function writerSpawner(entry: URL): SpawnWriter {
  if (!entry.pathname.endsWith('.ts')) return (workerData) => new Worker(entry, { workerData })
  // On Node 20 a worker does not inherit tsx's `--import` hooks: the thread registers them itself.
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}) })`
  return (workerData) => new Worker(boot, { eval: true, workerData })
}

const FROM_SOURCE = import.meta.url.endsWith('.ts')
/** The writer thread's entry, beside this module (.js once built, .ts when run from source). */
const ENTRY = new URL(`./writer-thread${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url)

/** The writes on the writer thread, which keeps their syncs off the event loop. */
export class SqliteWriter implements StoreWriter {
  readonly ownCommits = 0
  private thread: Thread | null = null
  private seq = 0

  /** The thread starts with the first write: commands that write nothing (migrate) skip it. */
  constructor(
    private readonly data: WriterData,
    private readonly spawn: SpawnWriter = writerSpawner(ENTRY),
  ) {}

  get running(): boolean {
    return this.thread !== null
  }

  write<K extends WriteName>(
    type: K,
    args: WriteArgs<K>,
    transfer: ArrayBuffer[] = [],
  ): Promise<WriteAnswer<K>> {
    const thread = this.thread ?? this.start()
    const seq = ++this.seq
    return new Promise((resolve, reject) => {
      // Referenced only while a request is in flight: an idle thread keeps no process alive.
      if (thread.waiting.size === 0) thread.worker.ref()
      thread.waiting.set(seq, { resolve: resolve as (value: unknown) => void, reject })
      const request: WriteRequest = { type, args, seq, sentAt: Date.now() }
      thread.worker.postMessage(request, transfer)
    })
  }

  /** Lets the thread close its connection and end; call once no write is in flight. */
  async close(): Promise<void> {
    const thread = this.thread
    if (thread === null) return
    this.thread = null
    const exited = new Promise((resolve) => thread.worker.once('exit', resolve))
    thread.worker.ref()
    thread.worker.postMessage({ type: 'close' } satisfies WriterRequest)
    await exited
  }

  private start(): Thread {
    const worker = this.spawn(this.data)
    worker.unref()
    const thread: Thread = { worker, waiting: new Map() }
    worker.on('message', (reply: WriterReply) => {
      const waiting = thread.waiting.get(reply.seq)
      if (waiting === undefined) return
      thread.waiting.delete(reply.seq)
      if (thread.waiting.size === 0) worker.unref()
      if ('value' in reply) waiting.resolve(reply.value)
      else waiting.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }))
    })
    // A thread that died (a bug, out of memory) fails what it held, which may or may not have
    // committed, and only that: its `exit` comes after its `error`, maybe after a new thread began.
    const died = (cause: Error) => {
      if (this.thread === thread) this.thread = null
      if (thread.waiting.size === 0) return
      const message = `the SQLite writer thread died: ${cause.message}`
      const err = Object.assign(new Error(message, { cause }), { code: WRITER_DIED })
      for (const waiting of thread.waiting.values()) waiting.reject(err)
      thread.waiting.clear()
    }
    worker.on('error', died)
    worker.on('exit', (code) => died(new Error(`it exited with code ${code}`)))
    this.thread = thread
    return thread
  }
}
