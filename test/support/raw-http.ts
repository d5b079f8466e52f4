// A client that writes bytes as given on a TCP socket and reads the answers back: for requests no
// well-behaved HTTP client would send (repeated headers, odd request targets, bodies still
// arriving when the answer comes).
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { TLSSocket } from 'node:tls'

export interface RawAnswer {
  status: number
  /** Names (lower case) and values in the order they came. */
  headers: [string, string][]
  body: string
}

export interface Exchange {
  answers: RawAnswer[]
  /** The connection was closed by the server (or reset) before the exchange ended. */
  closed: boolean
  /** The socket's error code, e.g. ECONNRESET, when it failed. */
  error: string | undefined
  /** Bytes that came but did not make a whole answer. */
  rest: string
  elapsedMs: number
}

export interface ExchangeOptions {
  /** Resolve once this many answers have come (default 1). */
  answers?: number
  /**
   * Resolve after this long whatever came (default 60 s). The answers wanted or the close end the
   * wait; the default only stops a hung exchange, long enough for a loaded machine.
   */
  timeoutMs?: number
  /** Read nothing until every byte has been written, as a client that sends first and reads after. */
  readAfterWriting?: boolean
  /** Written after `bytes`, one piece every `intervalMs` (a slow body). */
  trickle?: { pieces: string[]; intervalMs: number }
  /** Opens the connection (e.g. over TLS); by default plain TCP to 127.0.0.1:port. */
  connect?: () => Socket
}

export function header(answer: RawAnswer, name: string): string | undefined {
  return answer.headers.find(([n]) => n === name)?.[1]
}

function parseAnswers(buffer: Buffer): { answers: RawAnswer[]; rest: Buffer } {
  const answers: RawAnswer[] = []
  let rest = buffer
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n')
    if (headEnd === -1) break
    const [statusLine, ...lines] = rest.subarray(0, headEnd).toString('latin1').split('\r\n')
    const headers = lines.map((line): [string, string] => {
      const colon = line.indexOf(':')
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
    })
    const length = Number(headers.find(([n]) => n === 'content-length')?.[1] ?? 0)
    const end = headEnd + 4 + length
    if (rest.length < end) break
    answers.push({
      status: Number(statusLine!.split(' ')[1]),
      headers,
      body: rest.subarray(headEnd + 4, end).toString(),
    })
    rest = rest.subarray(end)
  }
  return { answers, rest }
}

/** Connects to 127.0.0.1:port, writes `bytes`, and collects the answers. */
export function exchange(
  port: number,
  bytes: string | Buffer,
  opts: ExchangeOptions = {},
): Promise<Exchange> {
  const wanted = opts.answers ?? 1
  const started = performance.now()
  return new Promise((resolve) => {
    const socket = opts.connect?.() ?? connect(port, '127.0.0.1')
    let received = Buffer.alloc(0)
    let error: string | undefined
    let done = false
    const timers: NodeJS.Timeout[] = []
    const finish = (closed: boolean) => {
      if (done) return
      done = true
      for (const timer of timers) clearTimeout(timer)
      socket.destroy()
      const { answers, rest } = parseAnswers(received)
      resolve({
        answers,
        closed,
        error,
        rest: rest.toString(),
        elapsedMs: performance.now() - started,
      })
    }
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (parseAnswers(received).answers.length >= wanted) finish(false)
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code
    })
    socket.on('close', () => finish(true))
    timers.push(setTimeout(() => finish(false), opts.timeoutMs ?? 60_000))
    if (opts.readAfterWriting) socket.pause()
    socket.write(bytes, () => {
      if (opts.readAfterWriting) socket.resume()
    })
    opts.trickle?.pieces.forEach((piece, i) => {
      timers.push(setTimeout(() => socket.write(piece), (i + 1) * opts.trickle!.intervalMs))
    })
  })
}

/** An HTTP/1.1 request as bytes: the request line, the headers as given (repeats allowed), a body. */
export function rawRequest(
  method: string,
  target: string,
  headers: [string, string][],
  body?: string,
): string {
  const lines = [`${method} ${target} HTTP/1.1`, ...headers.map(([n, v]) => `${n}: ${v}`)]
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`)
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`
}

/** One HTTP/1.1 response read off a raw connection. */
export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** A client connection driven byte by byte, so a request can be left half sent. */
export class RawConnection {
  private buffer = Buffer.alloc(0)
  private ended = false
  private wake: (() => void) | null = null
  readonly closed: Promise<void>
  /** The socket's error code (ECONNRESET, EPIPE...), once it failed. */
  error: string | undefined

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk])
      this.notify()
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.error ??= err.code
    })
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.ended = true
        this.notify()
        resolve()
      }),
    )
  }

  /** A connection to 127.0.0.1:port, or the one `open` makes (e.g. over TLS), once it is up. */
  static open(port: number, open?: () => Socket): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = open?.() ?? connect(port, '127.0.0.1')
      const up = socket instanceof TLSSocket ? 'secureConnect' : 'connect'
      socket.once(up, () => resolve(new RawConnection(socket)))
      socket.once('error', reject)
    })
  }

  write(text: string | Buffer): void {
    this.socket.write(text)
  }

  /**
   * Writes `bytes` as a client with nothing else to do: true once they are all handed to the
   * kernel, false when the connection failed or closed first.
   */
  send(bytes: Buffer): Promise<boolean> {
    if (this.socket.destroyed) return Promise.resolve(false)
    return new Promise((resolve) => {
      const closed = () => resolve(false)
      this.socket.once('close', closed)
      this.socket.write(bytes, (err) => {
        this.socket.off('close', closed)
        resolve(err == null)
      })
    })
  }

  /** Sends a FIN: the client has nothing more to send. */
  end(): void {
    this.socket.end()
  }

  destroy(): void {
    this.socket.destroy()
  }

  /** The next response on this connection, interim (1xx) ones included. */
  async next(): Promise<RawResponse> {
    for (;;) {
      const response = this.take()
      if (response) return response
      if (this.ended) throw new Error('connection closed before a whole response arrived')
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
  }

  private notify() {
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  private take(): RawResponse | null {
    const headEnd = this.buffer.indexOf('\r\n\r\n')
    if (headEnd === -1) return null
    const [statusLine, ...fields] = this.buffer
      .subarray(0, headEnd)
      .toString('latin1')
      .split('\r\n')
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)![1])
    const headers: Record<string, string> = {}
    for (const field of fields) {
      const colon = field.indexOf(':')
      headers[field.slice(0, colon).toLowerCase()] = field.slice(colon + 1).trim()
    }
    assert.equal(headers['transfer-encoding'], undefined, 'the service sends Content-Length')
    const length = status < 200 ? 0 : Number(headers['content-length'])
    const bodyStart = headEnd + 4
    if (this.buffer.length < bodyStart + length) return null
    const body = this.buffer.subarray(bodyStart, bodyStart + length).toString('utf8')
    this.buffer = this.buffer.subarray(bodyStart + length)
    return { status, headers, body }
  }
}
