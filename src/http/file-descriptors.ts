// How many connections the process takes before it would run out of file descriptors, and the
// count and log of those refused past that, which libuv would otherwise close unseen.
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import type { Server as NetServer } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'

/** File descriptors kept out of reach of API connections, for storage, logs and metrics scrapes. */
export const SPARE_FILE_DESCRIPTORS = 64

/** Refusals less than this apart are one burst, logged once. */
export const REFUSAL_BURST_GAP_MS = 10_000

/** The process's limit on open files (RLIMIT_NOFILE), as Linux shows it; null elsewhere. */
export function fileDescriptorLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return line === null ? null : Number(line[1])
  } catch {
    return null
  }
}

export interface FileDescriptorWatch {
  log: FastifyBaseLogger
  /** Counts one connection closed unanswered for want of file descriptors. */
  refused: () => void
  /** File descriptors kept for storage connections, over SPARE_FILE_DESCRIPTORS. */
  storageConnections: number
}

/**
 * Past the spare descriptors, each new connection is closed as soon as it is accepted, counted,
 * and the first of a burst logged, rather than closed unseen by libuv at the limit itself. Not in
 * a cluster worker, whose primary hands a refused connection to the next: there only accept
 * errors are seen.
 */
export function watchFileDescriptors(server: NetServer, o: FileDescriptorWatch): void {
  const limit = fileDescriptorLimit()
  const spare = SPARE_FILE_DESCRIPTORS + o.storageConnections
  if (limit !== null && !cluster.isWorker) server.maxConnections = Math.max(1, limit - spare)
  let lastRefusal = Number.NEGATIVE_INFINITY
  const refuse = (err?: NodeJS.ErrnoException) => {
    o.refused()
    const now = performance.now()
    if (now - lastRefusal >= REFUSAL_BURST_GAP_MS) {
      const fields = { fileDescriptorLimit: limit, maxConnections: server.maxConnections ?? null }
      o.log.error(
        err === undefined ? fields : { ...fields, err },
        'out of file descriptors: new connections are closed unanswered',
      )
    }
    lastRefusal = now
  }
  server.on('drop', () => refuse())
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall === 'accept' && (err.code === 'EMFILE' || err.code === 'ENFILE')) {
      refuse(err)
      return
    }
    // Any other listener error stays what it was without this listener: the process's end.
    process.nextTick(() => {
      throw err
    })
  })
}
