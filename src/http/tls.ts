// HTTPS and HTTP/2 served by the service itself, from a PEM certificate and key read at start.
import { readFileSync } from 'node:fs'
import type { Http2SecureServer, Http2ServerRequest, ServerHttp2Session } from 'node:http2'
import { createSecureContext } from 'node:tls'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type Config, ConfigError } from '../config.js'
import { type TransportLimits, tlsLimits } from './transport-limits.js'

export interface TlsMaterial {
  cert: Buffer
  key: Buffer
  http2: boolean
}

function readPem(variable: string, path: string, problems: string[]): Buffer | null {
  try {
    return readFileSync(path)
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable'
    problems.push(
      `${variable}=${JSON.stringify(path)} cannot be read (${reason}): expected a PEM file`,
    )
    return null
  }
}

/**
 * Reads the certificate and key named by the settings; undefined when TLS is off. An unusable
 * file or pair stops the start here, naming the settings, rather than at the first handshake.
 */
export function loadTls(config: Config): TlsMaterial | undefined {
  if (config.tlsCertPath === null || config.tlsKeyPath === null) return undefined
  const problems: string[] = []
  const cert = readPem('PETSTORE_TLS_CERT', config.tlsCertPath, problems)
  const key = readPem('PETSTORE_TLS_KEY', config.tlsKeyPath, problems)
  if (cert === null || key === null) throw new ConfigError(problems)
  try {
    createSecureContext({ cert, key })
  } catch (err) {
    throw new ConfigError([
      `PETSTORE_TLS_CERT and PETSTORE_TLS_KEY do not make a usable certificate and key: ${(err as Error).message}`,
    ])
  }
  return { cert, key, http2: config.http2 }
}

/**
 * Fastify's server options for the material, with Node's (which Fastify passes on only for plain
 * HTTP). Opaque, so the instance keeps its HTTP/1 type: the app uses only what both share.
 */
export function tlsServerOptions(
  tls: TlsMaterial | undefined,
  serverOptions: object,
  limits: TransportLimits,
): object {
  if (!tls) return {}
  const https = { ...serverOptions, ...tlsLimits(limits, tls.http2), cert: tls.cert, key: tls.key }
  return tls.http2 ? { http2: true, https: { ...https, allowHTTP1: true } } : { https }
}

/** Headers every response carries because of the transport: HSTS, over TLS only. */
export function transportHeaders(
  tls: TlsMaterial | undefined,
  hstsMaxAgeSeconds: number,
): Record<string, string> {
  return tls ? { 'strict-transport-security': `max-age=${hstsMaxAgeSeconds}` } : {}
}

/**
 * Asks the client to send its next request over a new connection: `Connection: close` on
 * HTTP/1, where HTTP/2 forbids that header and takes a GOAWAY instead (streams in flight finish).
 */
export function closeConnectionAfterResponse(request: FastifyRequest, reply: FastifyReply): void {
  if (request.raw.httpVersionMajor < 2) reply.header('connection', 'close')
  else (request.raw as unknown as Http2ServerRequest).stream.session?.close()
}

/**
 * Node's HTTP/2 server closes only idle HTTP/1 fallback connections on close; its sessions would
 * hold the close open until they time out, so each gets a GOAWAY and ends once its streams finish.
 */
export function closeHttp2SessionsOnClose(app: FastifyInstance): void {
  const server = app.server as unknown as Http2SecureServer
  const sessions = new Set<ServerHttp2Session>()
  server.on('session', (session) => {
    sessions.add(session)
    session.once('close', () => sessions.delete(session))
  })
  app.addHook('preClose', async () => {
    for (const session of sessions) session.close()
  })
}
