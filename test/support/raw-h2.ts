// HTTP/2 frames written by hand over TLS, for sessions no HTTP/2 client library would leave
// half-done: a preface alone, a header block never ended, a trickle of PINGs.
import { connect, type TLSSocket } from 'node:tls'

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')

export const FrameType = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7 }
export const Flag = { END_STREAM: 0x1, END_HEADERS: 0x4 }

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

export interface RawSession {
  socket: TLSSocket
  /** Types of the frames the server sent, in order. */
  frames: number[]
  /** Resolves with the time in ms from the connection's start when the server closed it. */
  closed: Promise<number>
}

/** A TLS connection negotiating h2, writing `bytes` once it is up, recording the server's frames. */
export function rawH2Session(port: number, ca: Buffer, bytes: Buffer): Promise<RawSession> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', ca, ALPNProtocols: ['h2'] }, () => {
      socket.write(bytes)
      resolve({ socket, frames, closed })
    })
    const frames: number[] = []
    let buffer = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      while (buffer.length >= 9 && buffer.length >= 9 + buffer.readUIntBE(0, 3)) {
        frames.push(buffer.readUInt8(3))
        buffer = buffer.subarray(9 + buffer.readUIntBE(0, 3))
      }
    })
    socket.once('error', reject)
    const closed = new Promise<number>((done) =>
      socket.once('close', () => done(performance.now() - started)),
    )
  })
}
