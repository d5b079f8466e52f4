// The main thread's side of the writer thread (writer-thread.ts): it hands over one batch of
// creates at a time and settles each batch's promise with its ids once the batch is durable.
import { Worker } from 'node:worker_threads'
import type { FileIdentity } from './faults.js'
import type { CreateItem } from './pet-writes.js'
import { encodeBatch, type WriterReply, type WriterRequest } from './writer-messages.js'
import type { WriterData } from './writer-thread.js'

interface Waiting {
  resolve: (ids: BigInt64Array) => void
  reject: (err: Error) => void
}

const FROM_SOURCE = import.meta.url.endsWith('.ts')
/** The writer thread's entry, beside this module (.js once built, .ts when run from source). */
const ENTRY = new URL(`./writer-thread${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url)

function spawnWriter(workerData: WriterData): Worker {
  if (!FROM_SOURCE) return new Worker(ENTRY, { workerData })
  // Run from TypeScript sources (the tests, through tsx): on Node 20 a worker does not inherit
  // tsx's `--import` hooks, so the thread registers them itself before loading its entry.
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(ENTRY.href)}) })`
  return new Worker(boot, { eval: true, workerData })
}

export class SqliteWriter {
  private worker: Worker | null = null
  private readonly waiting = new Map<number, Waiting>()
  private seq = 0

  /** The thread starts with the first batch: commands that never create (keys, migrate) skip it. */
  constructor(
    private readonly path: string,
    /** The file the store opened; the thread refuses to write to another one at the path. */
    private readonly identity: FileIdentity,
  ) {}

  /** Whether the thread is up (it starts with the first batch). */
  get running(): boolean {
    return this.worker !== null
  }

  /** Commits the batch in one transaction on the writer's connection; resolves once it is durable. */
  commit(items: CreateItem[]): Promise<BigInt64Array> {
    const batch = encodeBatch(items)
    return this.send((seq) => ({ type: 'commit', seq, batch }))
  }

  /** A write that changes nothing, on the writer's connection; resolves once it is durable. */
  async probe(): Promise<void> {
    await this.send((seq) => ({ type: 'probe', seq }))
  }

  private send(request: (seq: number) => WriterRequest): Promise<BigInt64Array> {
    const worker = this.worker ?? this.start()
    const seq = ++this.seq
    return new Promise((resolve, reject) => {
      // Referenced only while a request is in flight: an idle thread keeps no process alive.
      if (this.waiting.size === 0) worker.ref()
      this.waiting.set(seq, { resolve, reject })
      worker.postMessage(request(seq))
    })
  }

  /** Lets the thread close its connection and end; call once no batch is in flight. */
  async close(): Promise<void> {
    const worker = this.worker
    if (worker === null) return
    this.worker = null
    const exited = new Promise((resolve) => worker.once('exit', resolve))
    worker.ref()
    worker.postMessage({ type: 'close' } satisfies WriterRequest)
    await exited
  }

  private start(): Worker {
    const worker = spawnWriter({ path: this.path, identity: this.identity })
    worker.unref()
    worker.on('message', (reply: WriterReply) => {
      const waiting = this.waiting.get(reply.seq)
      if (waiting === undefined) return
      this.waiting.delete(reply.seq)
      if (this.waiting.size === 0) worker.unref()
      if ('ids' in reply) waiting.resolve(reply.ids)
      else waiting.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }))
    })
    // A thread that died (it ran out of memory) fails what it held; the next batch starts a new one.
    const died = (err: Error) => {
      if (this.worker === worker) this.worker = null
      for (const waiting of this.waiting.values()) waiting.reject(err)
      this.waiting.clear()
    }
    worker.on('error', died)
    worker.on('exit', (code) => {
      if (this.waiting.size > 0) died(new Error(`SQLite writer thread exited (${code})`))
      if (this.worker === worker) this.worker = null
    })
    this.worker = worker
    return worker
  }
}
