// What a server sends, on every transport: the send deadline (an answer its client takes nothing
// of is cut), the bound on pipelined HTTP/1.1 requests, larger bodies over TLS a slice at a time.
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import type { FastifyInstance, onSendHookHandler } from 'fastify'
import { checkEveryMs, type TransportLimits } from './transport-limits.js'

/**
 * Requests of one HTTP/1.1 connection the app works on at once: Node would start every request
 * of a 64 KiB read. Past this many, the connection is not read.
 */
export const MAX_PIPELINED_REQUESTS = 8

/**
 * A larger body over TLS goes one TLS record at a time: TLS encrypts all it is given at once, so
 * a client that reads nothing would hold an encrypted copy of it all.
 */
export const SEND_SLICE_BYTES = 16 * 1024

/** What sends answers, as the send deadline sees it: an HTTP/1.x connection, an HTTP/2 stream. */
export interface Sender {
  /** Bytes are written and not yet taken by the client. */
  unsent(): boolean
  /** A count that grows whenever the client takes some of them. */
  taken(): number
  /** The client has taken nothing since `since` (performance.now()), for the whole deadline. */
  cut(since: number): void
}

/**
 * The send deadline, as nginx's send_timeout: an answer the client takes none of for the request
 * timeout is cut, however long it has been going on while the client took some.
 */
export class SendDeadline {
  private readonly watched = new Map<Sender, { taken: number; since: number }>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly limitMs: number,
    private readonly everyMs: number,
  ) {}

  watch(sender: Sender): void {
    this.watched.set(sender, { taken: Number.NaN, since: performance.now() })
    this.timer ??= setInterval(() => this.check(), this.everyMs).unref()
  }

  unwatch(sender: Sender): void {
    this.watched.delete(sender)
  }

  private check(): void {
    // Stopped by a check that finds nothing, not by each connection or stream that ends.
    if (this.watched.size === 0) {
      clearInterval(this.timer)
      this.timer = undefined
      return
    }
    const now = performance.now()
    for (const [sender, last] of this.watched) {
      // NaN (equal to nothing) while there is nothing to send: the deadline starts afresh.
      const taken = sender.unsent() ? sender.taken() : Number.NaN
      if (taken !== last.taken) {
        last.taken = taken
        last.since = now
      } else if (now - last.since >= this.limitMs) {
        this.unwatch(sender)
        sender.cut(last.since)
      }
    }
  }
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/** An HTTP/1.x connection: the requests the app works on, those pipelined behind them. */
class Http1Connection implements Sender {
  /** Answers handed to the app and not finished, oldest first: Node sends them in order. */
  private readonly answering: ServerResponse[] = []
  private readonly queued: [IncomingMessage, ServerResponse][] = []
  private held = false

  constructor(
    private readonly socket: Socket,
    deadline: SendDeadline,
    private readonly handOver: RequestListener,
  ) {
    // Node resumes reading once what it has written is sent; while requests wait, it must not.
    socket.on('resume', () => {
      if (this.held) socket.pause()
    })
    socket.once('close', () => {
      deadline.unwatch(this)
      this.closed()
    })
    deadline.watch(this)
  }

  take(req: IncomingMessage, res: ServerResponse): void {
    this.queued.push([req, res])
    if (this.queued.length === 1) this.startQueued()
  }

  /** Node has written all of `res`. */
  finished(res: ServerResponse): void {
    const at = this.answering.indexOf(res)
    if (at === -1) return
    this.answering.splice(at, 1)
    // After Node is done with the answer that finished, which it still is while this runs.
    if (this.queued.length > 0) queueMicrotask(() => this.startQueued())
  }

  unsent(): boolean {
    return this.socket.writableLength > 0
  }

  taken(): number {
    // Completed writes, less what libuv still holds of the one under way (it shrinks as the
    // kernel takes a part of a large write), as Node's own socket timeouts count.
    const queued = (this.socket as { _handle?: { writeQueueSize?: number } })._handle
      ?.writeQueueSize
    return this.socket.bytesWritten - this.socket.writableLength - (queued ?? 0)
  }

  cut(): void {
    this.socket.destroy()
  }

  private startQueued(): void {
    while (this.answering.length < MAX_PIPELINED_REQUESTS && this.queued.length > 0) {
      const [req, res] = this.queued.shift()!
      this.answering.push(res)
      this.handOver(req, res)
    }
    const held = this.queued.length > 0
    if (held === this.held) return
    this.held = held
    if (held) this.socket.pause()
    else this.socket.resume()
  }

  private closed(): void {
    this.queued.length = 0
    this.held = false
    // Node tells only the answer that holds the socket; those behind it would be neither logged
    // nor released. After Node's own listeners, so none hears it twice.
    process.nextTick(() => {
      for (const res of this.answering) {
        if (res.closed) continue
        res.destroy()
        res.emit('close')
      }
    })
  }
}

const RESPONSE_FINISH = 'http.server.response.finish'

/** The limits on what a server sends; returns the deadline its HTTP/2 streams share. */
export function enforceSendLimits(app: FastifyInstance, limits: TransportLimits): SendDeadline {
  const server = app.server as Server
  const deadline = new SendDeadline(limits.requestTimeoutMs, checkEveryMs(limits))
  const connections = new WeakMap<Socket, Http1Connection>()
  const listeners = server.listeners('request') as RequestListener[]
  server.removeAllListeners('request')
  const handOver: RequestListener = (req, res) => {
    for (const listener of listeners) listener.call(server, req, res)
  }
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // HTTP/2 streams come on the same event on the HTTP/2 port; their session counts them.
    if (req.httpVersionMajor !== 1) return handOver(req, res)
    let connection = connections.get(req.socket)
    if (connection === undefined) {
      connection = new Http1Connection(req.socket, deadline, handOver)
      connections.set(req.socket, connection)
    }
    connection.take(req, res)
  })
  // Heard only while the server listens: Node's channel is the whole process's.
  const finished = (message: unknown) => {
    const { response, socket } = message as { response: ServerResponse; socket: Socket }
    connections.get(socket)?.finished(response)
  }
  const hear = () => subscribe(RESPONSE_FINISH, finished)
  if (server.listening) hear()
  server.on('listening', hear)
  server.on('close', () => unsubscribe(RESPONSE_FINISH, finished))
  app.addHook('onSend', sliceLargeBody)
  return deadline
}

/** A body larger than SEND_SLICE_BYTES, as a stream of slices of it (HTTP/1.x over TLS). */
const sliceLargeBody: onSendHookHandler<unknown> = (request, reply, payload, done) => {
  if (
    request.raw.httpVersionMajor !== 1 ||
    (request.raw.socket as TLSSocket).encrypted !== true ||
    request.method === 'HEAD' ||
    !(typeof payload === 'string' || Buffer.isBuffer(payload)) ||
    Buffer.byteLength(payload) <= SEND_SLICE_BYTES
  ) {
    return done(null, payload)
  }
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload
  reply.header('content-length', String(body.length))
  let at = 0
  const slices = new Readable({
    read() {
      const end = Math.min(at + SEND_SLICE_BYTES, body.length)
      this.push(at < end ? body.subarray(at, end) : null)
      at = end
    },
  })
  done(null, slices)
}
