// Where JSON log lines go: gathered in memory and written with one write(2) per event-loop turn,
// cheaper per line than sonic-boom in either mode. A crash loses at most the current turn's lines.
import { writeSync } from 'node:fs'

/** Past this many pending bytes the buffer is written at once rather than at the end of the turn. */
const MAX_PENDING_BYTES = 64 * 1024
/** A full non-blocking pipe (EAGAIN) is retried after this pause, blocking as pino's sync mode would. */
const EAGAIN_PAUSE_MS = 1

export class LogDestination {
  private pending: string[] = []
  private pendingBytes = 0
  private scheduled = false
  private failed = false
  private readonly flushLater = () => {
    this.scheduled = false
    this.flushSync()
  }
  private readonly flushAtExit = () => this.flushSync()

  constructor(private readonly fd: number = 1) {}

  /** pino's destination interface: one serialized line, newline included. */
  write(line: string): boolean {
    if (this.failed) return true
    // Listening for `exit` only while lines are pending keeps many destinations (one per app a
    // test builds) from piling listeners up on the process.
    if (this.pending.length === 0) process.on('exit', this.flushAtExit)
    this.pending.push(line)
    this.pendingBytes += line.length
    if (this.pendingBytes >= MAX_PENDING_BYTES) this.flushSync()
    else if (!this.scheduled) {
      this.scheduled = true
      setImmediate(this.flushLater)
    }
    return true
  }

  /** Writes everything pending before returning (also what pino.final and `exit` call). */
  flushSync(): void {
    if (this.pending.length === 0) return
    process.off('exit', this.flushAtExit)
    const data = Buffer.from(this.pending.join(''))
    this.pending = []
    this.pendingBytes = 0
    let offset = 0
    while (offset < data.length && !this.failed) {
      try {
        offset += writeSync(this.fd, data, offset)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, EAGAIN_PAUSE_MS)
          continue
        }
        // The log's reader is gone (EPIPE, a closed descriptor): say so once where it may be
        // seen, and keep serving requests rather than crash over a log line.
        this.failed = true
        process.stderr.write(`petstore: log output failed, logging stops: ${String(err)}\n`)
      }
    }
  }
}
