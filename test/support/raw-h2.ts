// HTTP/2 frames written by hand over TLS, for sessions no HTTP/2 client library would leave
// half-done: a preface alone, a header block never ended, a trickle of PINGs, flow-control
// windows kept shut or opened a little at a time.
import { connect, type TLSSocket } from 'node:tls'

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
}
export const Flag = { END_STREAM: 0x1, END_HEADERS: 0x4 }
export const Setting = { INITIAL_WINDOW_SIZE: 0x4 }
/** RST_STREAM and GOAWAY error codes (RFC 9113 §7). */
export const ErrorCode = { NO_ERROR: 0, CANCEL: 0x8 }

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9)
  head.writeUIntBE(payload.length, 0, 3)
  head.writeUInt8(type, 3)
  head.writeUInt8(flags, 4)
  head.writeUInt32BE(streamId, 5)
  return Buffer.concat([head, payload])
}

/** HPACK literal fields without indexing, names and values under 127 bytes, no Huffman coding. */
export function headerBlock(fields: [string, string][]): Buffer {
  const parts: Buffer[] = []
  for (const [name, value] of fields) {
    if (name.length > 126 || value.length > 126) throw new Error('field too long for this encoder')
    parts.push(Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([value.length]))
    parts.push(Buffer.from(value))
  }
  return Buffer.concat(parts)
}

/** The client preface and an empty SETTINGS frame: what opens every session. */
export const OPENING = Buffer.concat([PREFACE, frame(FrameType.SETTINGS, 0, 0)])

/** A SETTINGS frame with these identifiers and values. */
export function settingsFrame(values: [number, number][]): Buffer {
  const payload = Buffer.alloc(6 * values.length)
  values.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i)
    payload.writeUInt32BE(value, 6 * i + 2)
  })
  return frame(FrameType.SETTINGS, 0, 0, payload)
}

/** A WINDOW_UPDATE granting `increment` more bytes on the stream (0: the whole connection). */
export function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.alloc(4)
  payload.writeUInt32BE(increment, 0)
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, payload)
}

/** One frame the server sent. */
export interface Frame {
  type: number
  flags: number
  streamId: number
  payload: Buffer
}

export interface RawSession {
  socket: TLSSocket
  /** Types of the frames the server sent, in order. */
  frames: number[]
  /** The frames the server sent, in order. */
  received: Frame[]
  /** The first frame sent (or still to come) that `matches`; rejects if the connection ends first. */
  next(matches: (f: Frame) => boolean): Promise<Frame>
  /** Resolves with the time in ms from the connection's start when the server closed it. */
  closed: Promise<number>
}

/** A TLS connection negotiating h2, writing `bytes` once it is up, recording the server's frames. */
export function rawH2Session(port: number, ca: Buffer, bytes: Buffer): Promise<RawSession> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', ca, ALPNProtocols: ['h2'] }, () => {
      socket.write(bytes)
      resolve({ socket, frames, received, next, closed })
    })
    const frames: number[] = []
    const received: Frame[] = []
    const waiting = new Set<{
      matches: (f: Frame) => boolean
      found: (f: Frame) => void
      missing: (err: Error) => void
    }>()
    let ended = false
    const next = (matches: (f: Frame) => boolean) =>
      new Promise<Frame>((found, missing) => {
        const seen = received.find(matches)
        if (seen !== undefined) found(seen)
        else if (ended) missing(new Error('the connection ended before such a frame came'))
        else waiting.add({ matches, found, missing })
      })
    let buffer = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      while (buffer.length >= 9 && buffer.length >= 9 + buffer.readUIntBE(0, 3)) {
        const length = buffer.readUIntBE(0, 3)
        const f: Frame = {
          type: buffer.readUInt8(3),
          flags: buffer.readUInt8(4),
          streamId: buffer.readUInt32BE(5) & 0x7fffffff,
          payload: buffer.subarray(9, 9 + length),
        }
        frames.push(f.type)
        received.push(f)
        buffer = buffer.subarray(9 + length)
        for (const waiter of waiting) {
          if (!waiter.matches(f)) continue
          waiting.delete(waiter)
          waiter.found(f)
        }
      }
    })
    socket.once('error', reject)
    const closed = new Promise<number>((done) =>
      socket.once('close', () => {
        ended = true
        for (const waiter of waiting) waiter.missing(new Error('the connection ended first'))
        waiting.clear()
        done(performance.now() - started)
      }),
    )
  })
}
