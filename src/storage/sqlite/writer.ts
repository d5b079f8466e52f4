// The main thread's side of the writer thread (writer-thread.ts): it hands over every write of the
// store and settles each one's promise once the thread has made it durable, or failed it.
import { Worker } from 'node:worker_threads'
import type { CreateItem } from '../create-item.js'
import type {
  ApiKeyRecord,
  IdempotencyClaim,
  IdempotencyClaimRef,
  IdempotencyClaimRequest,
  NewPet,
} from '../store.js'
import { WRITER_DIED } from './faults.js'
import type { StoreWriter } from './store-writer.js'
import { encodeBatch, encodePets, type WriterReply, type WriterRequest } from './writer-messages.js'
import type { WriterData } from './writer-thread.js'

interface Waiting {
  resolve: (value: unknown) => void
  reject: (err: Error) => void
}

/** One writer thread, with the requests it holds: its death fails those and no others. */
interface Thread {
  worker: Worker
  waiting: Map<number, Waiting>
}

/** Starts a writer thread; another entry only in tests, which make a thread die. */
export type SpawnWriter = (data: WriterData) => Worker

/** A SpawnWriter of the thread whose entry is `entry` (a .js module, or .ts when run from source). */
export function writerSpawner(entry: URL): SpawnWriter {
  if (!entry.pathname.endsWith('.ts')) return (workerData) => new Worker(entry, { workerData })
  // Run from TypeScript sources (the tests, through tsx): on Node 20 a worker does not inherit
  // tsx's `--import` hooks, so the thread registers them itself before loading its entry.
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}) })`
  return (workerData) => new Worker(boot, { eval: true, workerData })
}

const FROM_SOURCE = import.meta.url.endsWith('.ts')
/** The writer thread's entry, beside this module (.js once built, .ts when run from source). */
const ENTRY = new URL(`./writer-thread${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url)

/** What a request still held by a thread that died fails with: it may or may not have committed. */
function writerDied(cause: Error): Error {
  return Object.assign(new Error(`the SQLite writer thread died: ${cause.message}`, { cause }), {
    code: WRITER_DIED,
  })
}

export class SqliteWriter implements StoreWriter {
  private thread: Thread | null = null
  private seq = 0

  /** The thread starts with the first write: commands that write nothing (migrate) skip it. */
  constructor(
    private readonly data: WriterData,
    private readonly spawn: SpawnWriter = writerSpawner(ENTRY),
  ) {}

  /** Whether a thread is up (one starts with the first write). */
  get running(): boolean {
    return this.thread !== null
  }

  /** Commits the batch in one transaction on the writer's connection; resolves once it is durable. */
  commit(items: CreateItem[]): Promise<BigInt64Array> {
    const batch = encodeBatch(items)
    return this.send((seq, sentAt) => ({ type: 'commit', seq, sentAt, batch }))
  }

  /** A write that changes nothing, on the writer's connection; resolves once it is durable. */
  probe(): Promise<void> {
    return this.send((seq, sentAt) => ({ type: 'probe', seq, sentAt }))
  }

  claim(request: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    return this.send((seq, sentAt) => ({ type: 'claim', seq, sentAt, request }))
  }

  release(ref: IdempotencyClaimRef): Promise<void> {
    return this.send((seq, sentAt) => ({ type: 'release', seq, sentAt, ref }))
  }

  purge(cutoff: Date): Promise<number> {
    return this.send((seq, sentAt) => ({ type: 'purge', seq, sentAt, cutoff }))
  }

  insertKey(key: ApiKeyRecord): Promise<void> {
    return this.send((seq, sentAt) => ({ type: 'insertKey', seq, sentAt, key }))
  }

  revokeKey(id: string, at: Date): Promise<boolean> {
    return this.send((seq, sentAt) => ({ type: 'revokeKey', seq, sentAt, id, at }))
  }

  insertPets(pets: readonly NewPet[], createdAt: number): Promise<void> {
    const columns = encodePets(pets)
    const transfer = [columns.categoryIds.buffer as ArrayBuffer]
    return this.send(
      (seq, sentAt) => ({ type: 'insertPets', seq, sentAt, pets: columns, createdAt }),
      transfer,
    )
  }

  /** The answer's type is the one of the request's SqliteWrites method (writer-thread.ts). */
  private send<T>(
    request: (seq: number, sentAt: number) => WriterRequest,
    transfer?: ArrayBuffer[],
  ): Promise<T> {
    const thread = this.thread ?? this.start()
    const seq = ++this.seq
    return new Promise<T>((resolve, reject) => {
      // Referenced only while a request is in flight: an idle thread keeps no process alive.
      if (thread.waiting.size === 0) thread.worker.ref()
      thread.waiting.set(seq, { resolve: resolve as (value: unknown) => void, reject })
      thread.worker.postMessage(request(seq, Date.now()), transfer)
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
    // A thread that died (a bug, out of memory) fails what it held, and only that: its `exit`
    // comes milliseconds after its `error`, when the next write may be on a new thread already.
    const died = (cause: Error) => {
      if (this.thread === thread) this.thread = null
      if (thread.waiting.size === 0) return
      const err = writerDied(cause)
      for (const waiting of thread.waiting.values()) waiting.reject(err)
      thread.waiting.clear()
    }
    worker.on('error', died)
    worker.on('exit', (code) => died(new Error(`it exited with code ${code}`)))
    this.thread = thread
    return thread
  }
}
