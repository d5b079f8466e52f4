// The writer thread of the SQLite store: its own connection makes every write of the store (the
// batches of creates, idempotency claims, API keys, the seed), so each wait for the write lock
// (busy_timeout) and each WAL sync happens here, not on the event loop. In WAL mode, readers see a
// write once it is synced, and never wait for one.
import { parentPort, workerData } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { IdempotencyCap } from '../idempotency-cap.js'
import { BUSY_TIMEOUT_MS, openDatabase } from './connection.js'
import { FILE_REPLACED, type FileIdentity, identityAt, sameFile } from './faults.js'
import type { WriteRequest, WriterReply, WriterRequest } from './writer-messages.js'
import { type SqliteWrites, sqliteWrites } from './writes.js'

export interface WriterData {
  path: string
  /** The file the store opened: the thread writes to no other. */
  identity: FileIdentity
  /** IdempotencyCap's cap: the thread counts each API key's records as it claims. */
  idempotencyKeysPerApiKey: number
}

const port = parentPort!
const { path, identity, idempotencyKeysPerApiKey } = workerData as WriterData
const cap = new IdempotencyCap(idempotencyKeysPerApiKey)

interface Connection {
  db: Database.Database
  writes: SqliteWrites
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
  let db: Database.Database | undefined
  try {
    db = openDatabase(path, { create: false })
    checkFile()
  } catch (err) {
    db?.close()
    // A file that is gone is reported as such rather than as a file that cannot be opened.
    checkFile()
    throw err
  }
  // Appends to the id index's end touch few pages: a small cache keeps the thread's memory low.
  db.pragma('cache_size = -2048')
  return { db, writes: sqliteWrites(db, cap) }
}

/**
 * Time queued that is not taken off the wait for the lock: a batch's commit is this quick, and
 * setting busy_timeout twice costs more than the time it would save.
 */
const QUEUE_SLACK_MS = 20

/**
 * busy_timeout bounds a write's whole wait, its time queued here included: behind a write waiting
 * for another process's lock, each queued write would otherwise wait busy_timeout again in turn.
 */
function performInTime({ db, writes }: Connection, { type, args, sentAt }: WriteRequest): unknown {
  const perform = () => (writes[type] as (...args: unknown[]) => unknown)(...args)
  const queuedMs = Date.now() - sentAt
  if (queuedMs <= QUEUE_SLACK_MS) return perform()
  const busyTimeout = (ms: number) => db.pragma(`busy_timeout = ${Math.floor(ms)}`)
  busyTimeout(Math.max(0, BUSY_TIMEOUT_MS - queuedMs))
  try {
    return perform()
  } finally {
    busyTimeout(BUSY_TIMEOUT_MS)
  }
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
    const value = performInTime(connection, request)
    // After the commit and before the answer goes back: a write made to a file that was removed
    // or replaced meanwhile is reported as failed, never acknowledged. Here rather than on the
    // event loop, which a stat per batch would slow (docs/performance.md).
    checkFile()
    reply = { seq: request.seq, value }
    if (value instanceof BigInt64Array) transfer = [value.buffer as ArrayBuffer]
  } catch (err) {
    const e = err as Error & { code?: string }
    reply = { seq: request.seq, error: { message: e.message, code: e.code } }
  }
  port.postMessage(reply, transfer)
})
