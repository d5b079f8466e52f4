// Fastify's server, made through its public serverFactory option, with a lane in front that may
// take a request before Fastify's handler sees it (the fast lane).
import {
  createServer as createHttpServer,
  type ServerOptions as HttpServerOptions,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import {
  createServer as createHttpsServer,
  type ServerOptions as HttpsServerOptions,
} from 'node:https'
import type { FastifyServerFactory } from 'fastify'

/** The Fastify options the server is made from. */
interface ServerOptions {
  http?: HttpServerOptions
  https?: HttpsServerOptions
  keepAliveTimeout?: number
  requestTimeout?: number
  connectionTimeout?: number
}

/** Takes the request and returns true, or returns false having done nothing at all. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean

/**
 * A serverFactory for HTTP/1 (plain or TLS) that makes the server Fastify would make with the
 * same options, and offers each request to `lane()` first. The lane is read per request, so it
 * can be set once the routes it shares state with exist.
 */
export function serverWithLane(lane: () => Lane | null): FastifyServerFactory {
  return (handler, options) => {
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      const front = lane()
      if (front === null || !front(req, res)) handler(req, res)
    }
    const o = options as ServerOptions
    const server = o.https
      ? createHttpsServer(o.https, listener)
      : createHttpServer(o.http ?? {}, listener)
    if (o.keepAliveTimeout !== undefined) server.keepAliveTimeout = o.keepAliveTimeout
    if (o.requestTimeout !== undefined) server.requestTimeout = o.requestTimeout
    server.setTimeout(o.connectionTimeout ?? 0)
    return server
  }
}
