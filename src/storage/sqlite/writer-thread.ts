// The writer thread of the SQLite store: its own connection makes every write of the store, so each
// wait for the write lock (busy_timeout) and each WAL sync happens here, not on the event loop. In
// WAL mode, readers see a write once it is synced, and never wait for one.
import { parentPort, workerData } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { IdempotencyCap } from '../idempotency-cap.js'
import { BUSY_TIMEOUT_MS, openDatabase } from './driver.js'
import { FILE_REPLACED, identityAt } from './faults.js'
import type { WriteRequest, WriterReply, WriterRequest } from './writer-messages.js'
import { type SqliteWrites, sqliteWrites } from './writes.js'

export interface WriterData {
  path: string
  /** The file the store opened (identityAt): the thread writes to no other. */
  identity: string
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

/** Opened at the first request: a failure to open is that request's answer, and the next retries. */
let connection: Connection | null = null

/** Throws FILE_REPLACED unless the path names the store's file. */
function checkFile(): void {
  if (identityAt(path) !== identity) {
    const err = new Error('the database file was removed or replaced')
    throw Object.assign(err, { code: FILE_REPLACED })
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

/** Time queued not taken off the wait for the lock: setting busy_timeout twice costs more. */
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
    // After the commit, before the answer: a write to a file removed or replaced meanwhile is
    // failed, never acknowledged. Here, not on the event loop, which a stat per batch would slow.
    checkFile()
    reply = { seq: request.seq, value }
    if (value instanceof BigInt64Array) transfer = [value.buffer as ArrayBuffer]
  } catch (err) {
    const e = err as Error & { code?: string }
    reply = { seq: request.seq, error: { message: e.message, code: e.code } }
  }
  port.postMessage(reply, transfer)
})
