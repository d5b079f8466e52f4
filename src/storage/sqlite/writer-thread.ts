// The writer thread of the SQLite store: its own connection commits the batches of creates, so each
// WAL sync waits here, not on the event loop. In WAL mode, readers see a batch once it is synced.
import { parentPort, workerData } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { openDatabase } from './connection.js'
import { FILE_REPLACED, type FileIdentity, identityAt, sameFile, writeProbe } from './faults.js'
import { createTransaction } from './pet-writes.js'
import { decodeBatch, type WriterReply, type WriterRequest } from './writer-messages.js'

export interface WriterData {
  path: string
  /** The file the store opened: the thread writes to no other. */
  identity: FileIdentity
}

const port = parentPort!
const { path, identity } = workerData as WriterData

interface Connection {
  db: Database.Database
  commit: ReturnType<typeof createTransaction>
  probe: () => void
}

/**
 * Opened at the first request rather than at start: a failure to open (the file gone, the disk
 * failing) is then the answer to that request, and the next one tries again.
 */
let connection: Connection | null = null

/** Throws FILE_REPLACED unless the path names the store's file. */
function checkFile(): void {
  if (!sameFile(identityAt(path), identity)) {
    throw Object.assign(new Error('the database file was removed or replaced'), {
      code: FILE_REPLACED,
    })
  }
}

function open(): Connection {
  let db: Database.Database
  try {
    db = openDatabase(path, { create: false })
  } catch (err) {
    // A file that is gone is reported as such rather than as a file that cannot be opened.
    checkFile()
    throw err
  }
  try {
    checkFile()
  } catch (err) {
    db.close()
    throw err
  }
  // Appends to the id index's end touch few pages: a small cache keeps the thread's memory low.
  db.pragma('cache_size = -2048')
  return { db, commit: createTransaction(db), probe: writeProbe(db) }
}

port.on('message', (request: WriterRequest) => {
  if (request.type === 'close') {
    connection?.db.close()
    port.close()
    return
  }
  let reply: WriterReply
  let transfer: ArrayBuffer[] = []
  try {
    connection ??= open()
    if (request.type === 'probe') {
      connection.probe()
      reply = { seq: request.seq, ids: new BigInt64Array(0) }
    } else {
      const ids = BigInt64Array.from(connection.commit(decodeBatch(request.batch)))
      // After the commit and before the ids go back: a batch committed to a file that was
      // removed or replaced meanwhile is reported as failed, never acknowledged. Here rather
      // than on the event loop, which a stat per batch would slow (docs/performance.md).
      checkFile()
      reply = { seq: request.seq, ids }
      transfer = [ids.buffer as ArrayBuffer]
    }
  } catch (err) {
    const e = err as Error & { code?: string }
    reply = { seq: request.seq, error: { message: e.message, code: e.code } }
  }
  port.postMessage(reply, transfer)
})
