// The writer thread of the SQLite store: its own connection commits the batches of creates, so
// the WAL sync of each commit (synchronous=FULL, ~0.3 to 1 ms on this disk) waits here and not on
// the event loop, which serves reads meanwhile. Readers on the main connection see a batch only
// once SQLite has synced it: in WAL mode the commit is published to readers after the sync.
import { parentPort, workerData } from 'node:worker_threads'
import { openDatabase } from './connection.js'
import { createTransaction } from './pet-writes.js'
import { decodeBatch, type WriterReply, type WriterRequest } from './writer-messages.js'

const port = parentPort!
const db = openDatabase((workerData as { path: string }).path, { create: false })
// Appending at the end of the id index touches few pages: 2 MB of page cache instead of the
// default 16 MB keeps the thread's share of the process's memory small.
db.pragma('cache_size = -2048')
const commit = createTransaction(db)

port.on('message', (request: WriterRequest) => {
  if (request.type === 'close') {
    db.close()
    port.close()
    return
  }
  let reply: WriterReply
  let transfer: ArrayBuffer[] = []
  try {
    const ids = BigInt64Array.from(commit(decodeBatch(request.batch)))
    reply = { seq: request.seq, ids }
    transfer = [ids.buffer as ArrayBuffer]
  } catch (err) {
    const e = err as Error & { code?: string }
    reply = { seq: request.seq, error: { message: e.message, code: e.code } }
  }
  port.postMessage(reply, transfer)
})
