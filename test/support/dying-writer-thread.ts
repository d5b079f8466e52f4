// The SQLite writer thread (src/storage/sqlite/writer-thread.ts), made to die for real while it holds
// a batch of creates: an uncaught exception ends it as a bug or running out of memory would. Its
// controls, in workerData beside the thread's own, are described in dying-writer.ts.
import { parentPort, workerData } from 'node:worker_threads'
import type { WriterRequest } from '../../src/storage/sqlite/writer-messages.js'
import { DIE_AFTER_CLAIM, DIE_BEFORE_COMMIT } from './dying-writer.js'

const port = parentPort!
const { armed, gate } = workerData as { armed: Int32Array; gate: Int32Array }
let dieBeforeAnswering = false

/** Sees each request before the thread does; throwing here ends the thread before performing it. */
function beforeRequest(request: WriterRequest): void {
  Atomics.wait(gate, 0, 0)
  const death = Atomics.load(armed, 0)
  if (death === 0 || request.type !== (death === DIE_AFTER_CLAIM ? 'claim' : 'commit')) return
  Atomics.store(armed, 0, 0)
  if (death === DIE_BEFORE_COMMIT) throw new Error('killed before its commit')
  dieBeforeAnswering = true
}

// The thread's listener, wrapped as the thread adds it: a listener added earlier would start the
// port, and take the first request before the thread's own module had loaded.
const on = port.on.bind(port)
port.on = ((event: 'message', listener: (request: WriterRequest) => void) =>
  on(event, (request: WriterRequest) => {
    beforeRequest(request)
    listener(request)
  })) as typeof port.on

// The thread answers each request through postMessage, after the commit: throwing there ends it
// with the write committed and unanswered.
const answer = port.postMessage.bind(port)
port.postMessage = (message: unknown, transfer?: Parameters<typeof answer>[1]) => {
  if (dieBeforeAnswering) throw new Error('killed after its commit')
  answer(message, transfer)
}

await import('../../src/storage/sqlite/writer-thread.js')
