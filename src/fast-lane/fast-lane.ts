// The fast lane: a second way into the same core, on node:http ahead of Fastify's router, for the
// three hot operations. It routes a request only when its request line and headers are the
// plainest form (router.ts), before anything has an effect; from then on it answers it whatever the
// outcome, through the same admission, operations and replies as the routes. Why a second way in:
// Fastify's request objects, hooks and router cost more than a cached answer (docs/performance.md).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyBaseLogger, FastifySchemaCompiler } from 'fastify'
import type { Admission, Admissions } from '../auth/admission.js'
import type { OriginOf, RequestOrigin } from '../http/forwarded.js'
import { parseJsonBody } from '../http/json-body.js'
import type { CommonHeaders, Outcome } from '../http/replies.js'
import { errorOutcome, JSON_CONTENT_TYPE, setHeader } from '../http/replies.js'
import { requestId } from '../http/request-id.js'
import type { CompletedRequest } from '../http/request-line.js'
import { requestLineWriter } from '../http/request-log.js'
import type { Turn, VersionThen } from '../http/turn.js'
import type { Metrics } from '../observability/metrics.js'
import type { Caller, PetOperations } from '../pets/operations.js'
import { NewPet, type NewPetBody } from '../pets/schemas.js'
import { newPetOf } from '../pets/service.js'
import type { DataVersion, Deadline, NewPet as NewPetRecord } from '../storage/store.js'
import type { LaneRoute } from './router.js'

/** Takes the request and returns true, or returns false having done nothing at all. */
export type FastLane = (req: IncomingMessage, res: ServerResponse) => boolean

export interface FastLaneOptions {
  /** The lane's route of a request, or null for Fastify's (laneRouter). */
  route: (req: IncomingMessage) => LaneRoute | null
  admissions: Admissions
  operations: PetOperations
  commonHeaders: CommonHeaders
  /** The app's validator compiler: a create's body is checked by the route's own validator. */
  compileValidator: FastifySchemaCompiler<unknown>
  /** The turn shared with the routes: one version read, answers written together. */
  turn: Turn
  logger: FastifyBaseLogger
  metrics: Metrics
  /** CORS is on: every response carries `Vary: Origin`, as @fastify/cors sets it. */
  varyOrigin: boolean
  originOf: OriginOf
}

/** A request the lane routed, on its way to its answer. */
interface Exchange {
  req: IncomingMessage
  res: ServerResponse
  route: LaneRoute
  /** performance.now() as the lane took it. */
  started: number
  id: string
  origin: RequestOrigin
  /** The answer's headers so far, in the routes' order: the common headers, then admission's. */
  headers: string[]
  keyName: string | undefined
  /** By when the database must have answered, from the turn (src/http/turn.ts). */
  deadline: Deadline
}

export function createFastLane(o: FastLaneOptions): FastLane {
  const { turn } = o
  const write = answerWriter(o)
  const newPetOfBody = newPetParser(o.compileValidator)

  const respond = (x: Exchange, outcome: Outcome) => {
    const h = outcome.headers
    for (let i = 0; i < h.length; i += 2) setHeader(x.headers, h[i]!, h[i + 1]!)
    turn.write(() => write(x, outcome))
  }
  const fail = (x: Exchange, err: unknown) =>
    respond(x, errorOutcome(err, o.logger.child({ requestId: x.id })))
  const settle = (x: Exchange, later: Promise<void> | undefined) =>
    later?.catch((err) => fail(x, err))

  const operate = (x: Exchange, caller: Caller, body: Buffer | undefined) => {
    const { route } = x
    const ops = o.operations
    const send = (outcome: Outcome) => respond(x, outcome)
    if (route.operation === 'listPets') {
      const { query } = route
      settle(x, ops.answerList(query, caller, send))
    } else if (route.operation === 'getPet') {
      ops.getPetCalled(caller)
      const { petId } = route
      settle(x, ops.answerGet(petId, caller, send))
    } else {
      const pet = newPetOfBody(body!)
      settle(x, ops.create(pet, caller).then(send))
    }
  }
  const admitted = (x: Exchange, a: Admission, version: DataVersion | undefined, body?: Buffer) => {
    x.keyName = a.key?.name
    for (const h of a.headers) x.headers.push(h)
    if (a.refusal !== null) return fail(x, a.refusal)
    const { protocol, host } = x.origin
    const log = {
      warn: (fields: object, msg: string) => o.logger.warn({ requestId: x.id, ...fields }, msg),
    }
    try {
      operate(x, { version, deadline: x.deadline, key: a.key!, log, protocol, host }, body)
    } catch (err) {
      fail(x, err)
    }
  }
  const serve: (x: Exchange, body?: Buffer) => VersionThen =
    (x, body) => (version, deadline, unavailable) => {
      if (unavailable !== null) return fail(x, unavailable)
      x.deadline = deadline
      const { authorization } = x.req.headers
      try {
        o.admissions.admit(authorization, x.origin.ip, version?.keys, deadline).then(
          (r) => admitted(x, r, version, body),
          (err) => fail(x, err),
        )
      } catch (err) {
        fail(x, err)
      }
    }

  return (req, res) => {
    const route = o.route(req)
    if (route === null) return false
    const x = exchange(o, req, res, route)
    if (route.operation !== 'createPet') turn.withVersion(serve(x))
    else readBody(req, (body) => turn.withVersion(serve(x, body)))
    return true
  }
}

/** A routed request with the headers the routes' hooks would have set before admission. */
function exchange(
  o: FastLaneOptions,
  req: IncomingMessage,
  res: ServerResponse,
  route: LaneRoute,
): Exchange {
  const id = requestId(req)
  const headers = o.commonHeaders.headers(id, route.operation === 'getPet')
  if (o.varyOrigin) headers.push('vary', 'Origin')
  return {
    req,
    res,
    route,
    started: performance.now(),
    id,
    origin: o.originOf(req),
    headers,
    keyName: undefined,
    deadline: 0,
  }
}

/** Calls `then` with the whole body; a client gone before the end is left without an answer. */
function readBody(req: IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('error', () => {})
  req.on('end', () => then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
}

/** A create's body as the route reads it: its parser, then its validator, with their errors. */
function newPetParser(compileValidator: FastifySchemaCompiler<unknown>) {
  const validate = compileValidator({ schema: NewPet, httpPart: 'body' } as never) as ((
    body: unknown,
  ) => boolean) & { errors?: unknown[] | null }
  return (body: Buffer): NewPetRecord => {
    const parsed = parseJsonBody(body)
    if (!validate(parsed)) {
      throw Object.assign(new Error('body does not match its schema'), {
        statusCode: 400,
        validation: validate.errors,
        validationContext: 'body',
      })
    }
    return newPetOf(parsed as NewPetBody)
  }
}

/** Writes an answer, then its metrics and its `request completed` line, as the routes' hooks do. */
function answerWriter(o: FastLaneOptions) {
  const logCompleted = requestLineWriter(o.logger)
  return (x: Exchange, outcome: Outcome) => {
    try {
      const { status, body } = outcome
      x.headers.push(
        'content-type',
        JSON_CONTENT_TYPE,
        'content-length',
        String(Buffer.byteLength(body)),
      )
      x.res.writeHead(status, x.headers)
      x.res.end(body)
      const elapsedMs = performance.now() - x.started
      const method = x.req.method!
      const operation = x.route.operation
      o.metrics.requestCompleted({ operation, method, status }, elapsedMs / 1000)
      o.metrics.hotPathAnswered()
      const line: CompletedRequest = {
        requestId: x.id,
        operation,
        method,
        url: x.req.url,
        status,
        elapsedMs,
        apiKeyName: x.keyName,
        remoteAddress: x.origin.ip,
      }
      // As the routes' line: written once the answer is out, or cut short (`delivered: false`).
      x.res.once('close', () => {
        if (!x.res.writableFinished) line.delivered = false
        logCompleted(line)
      })
    } catch (err) {
      // The client sees its connection end rather than wait forever, and the log says why.
      o.logger.error({ err, requestId: x.id }, 'fast lane failed to answer')
      if (!x.res.headersSent) x.res.destroy()
    }
  }
}
