// Validation, serialization and the one body type accepted: UTF-8 JSON, parsed with exact
// integers once authentication and the declared media type and length have passed.
import type { Http2ServerRequest } from 'node:http2'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { continueWhenRead } from './early-answer.js'
import { unsupportedContentEncoding } from './edge.js'
import type { Http2Bodies } from './http2-limits.js'
import { isAcceptedJsonCharset, parseJsonBody } from './json-body.js'
import { serializerCompiler } from './serialization.js'
import { createValidatorCompiler } from './validation.js'

/** Validation, serialization and the one body type accepted (JSON). */
export function registerBodies(app: FastifyInstance, http2Bodies: Http2Bodies | undefined): void {
  app.setValidatorCompiler(createValidatorCompiler())
  app.setSerializerCompiler(serializerCompiler)
  app.removeAllContentTypeParsers()
  // Its parameters are judged before the body is read (preParsing below).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body)
  })
  // Parsed here rather than in the content-type parser, whose failures Fastify answers with
  // `Connection: close`: a malformed body is an error like any other, on a connection that stays.
  app.addHook('preValidation', (request, _reply, done) => {
    if (!Buffer.isBuffer(request.body)) return done()
    try {
      request.body = parseJsonBody(request.body)
      done()
    } catch (err) {
      done(err as Error)
    }
  })
  // After authentication, before a byte of the body is read. Fastify then refuses another media
  // type or a declared length over the limit, and reading the body sends its 100 Continue.
  app.addHook('preParsing', (request, reply, payload, done) => {
    const refused = unsupportedContentEncoding(request.raw) ?? unreadableJson(request)
    if (refused !== null) return done(refused)
    const body =
      http2Bodies !== undefined && request.raw.httpVersionMajor === 2
        ? http2Bodies.watch(request.raw as unknown as Http2ServerRequest)
        : payload
    continueWhenRead(request.raw, reply.raw, body)
    done(null, body)
  })
}

/** Methods whose body Fastify never parses: their Content-Type is not judged. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'TRACE'])

/** A body the JSON parser would read whose Content-Type parameters do not make it UTF-8 JSON. */
function unreadableJson(request: FastifyRequest): ApiError | null {
  if (BODYLESS_METHODS.has(request.method) || request.mediaType !== 'application/json') return null
  if (isAcceptedJsonCharset(request.headers['content-type']!)) return null
  return new ApiError('unsupported_media_type', 'request body must be UTF-8 application/json')
}
