// The hot operations, list pets, get a pet and create a pet, answered on node:http ahead of
// Fastify's router when the answer is a plain 200 or 201; every other request goes to Fastify as it
// arrived (a create with the body the hot path read, see replayedBody).
//
// Why: on a list request served from the page cache, Fastify's request and reply objects, its
// hook chain (four async hooks), the per-request child logger and the route lookup cost more
// than everything the service itself does; answering here (with the answers of a turn written
// together, below) took the list from 0.31 to 0.64 of a bare node:http server (docs/performance.md).
//
// The rule that keeps the two paths one API: the hot path answers only a request it can answer
// exactly as the routes would, and it decides that before it has any effect. Anything it is not
// sure of (a header it does not handle, a query it does not parse, a key it has not seen at this
// data version, a budget used up, a page not cached, a pet not found, a sunset, a drain) hands the
// untouched request to Fastify, which produces the answer, error or not. test/hot-path.test.ts
// sends the same requests through both and compares status, headers and body byte for byte.
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { FastifyBaseLogger, FastifyError, FastifySchemaCompiler } from 'fastify'
import type { Admitted, HotAuth } from '../auth/authenticate.js'
import type { Clock } from '../clock.js'
import { edgeViolation } from '../http/edge.js'
import { toErrorBody } from '../http/error-handling.js'
import type { OriginOf } from '../http/forwarded.js'
import { parseJsonBody } from '../http/json-body.js'
import { requestId } from '../http/request-id.js'
import { requestLineWriter } from '../http/request-log.js'
import { compileSerializer } from '../http/serialization.js'
import type { Metrics } from '../observability/metrics.js'
import {
  type DataVersion,
  type NewPet as NewPetRecord,
  type Pet as PetRecord,
  readDataVersion,
  type Store,
} from '../storage/store.js'
import { type DeprecatedCallCounter, type DeprecationHeaders, isSunset } from './deprecation.js'
import { nextPageLink } from './next-link.js'
import { ReadCache } from './read-cache.js'
import { JSON_CONTENT_TYPE } from './routes.js'
import {
  ListPetsQuery,
  type ListPetsQueryType,
  NewPet,
  type NewPetBody,
  Pet,
  PetIdParams,
} from './schemas.js'
import { isStorableName, newPetOf, type PetService } from './service.js'

export interface HotPathOptions {
  auth: HotAuth
  /** The app's validator compiler (createValidatorCompiler), which the routes' schemas went through. */
  compileValidator: FastifySchemaCompiler<unknown>
  /** Must give dataVersion; see canServeHotPath. */
  store: Store
  pages: ReadCache
  pets: ReadCache
  /** Creates go through the routes' own service (createThen). */
  service: PetService
  /** The app's body limit: a larger body is Fastify's to refuse. */
  bodyLimit: number
  logger: FastifyBaseLogger
  metrics: Metrics
  clock: Clock
  deprecatedCalls: DeprecatedCallCounter
  deprecation: DeprecationHeaders
  /** Headers every response carries for its transport (HSTS over TLS), as the root hook sets them. */
  transport: Record<string, string>
  isDraining: () => boolean
  /** CORS is on: @fastify/cors puts `Vary: Origin` on every response, with or without Origin. */
  varyOrigin: boolean
  /** The client address, host and protocol, by the rule Fastify's requests follow too. */
  originOf: OriginOf
  fallbackOrigin: string
}

interface Answer {
  req: IncomingMessage
  res: ServerResponse
  /** performance.now() as the request reached the hot path. */
  started: number
  status: number
  operation: string
  apiKeyName: string
  requestId: string
  /**
   * Name, value, name, value…, in the order the hooks set them (hookHeaders), X-Request-Id first.
   * Why a flat array: Node's writeHead walks an object's keys with for-in and reads each value
   * with a keyed load that the per-request shapes make megamorphic; an array is walked by index.
   */
  headers: string[]
  body: string
}

/** Sets `name` in a flat header list: in its place when present, else at the end (as assigning a key). */
function setHeader(headers: string[], name: string, value: string): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === name) {
      headers[i + 1] = value
      return
    }
  }
  headers.push(name, value)
}

/** A header record as a flat list, in its key order. */
const flat = (headers: Record<string, string>): string[] => Object.entries(headers).flat()

/** Fastify's handler: takes a request the hot path declines. */
export type Fallback = (req: IncomingMessage, res: ServerResponse) => void

/**
 * A request taken by the hot path that needs the data version (a list, a get, a create's key
 * check), to be answered or handed on at the end of the turn.
 */
interface Read {
  req: IncomingMessage
  res: ServerResponse
  fallback: Fallback
  /** Answers at the turn's data version, or returns false having done nothing at all. */
  answer: (version: DataVersion) => boolean
}

/**
 * Takes the request and returns true, or returns false having done nothing at all. A taken
 * request is answered later, or handed to `fallback` untouched: a list or get at the end of the
 * event-loop turn, when the data version is read (should the page not be cached, the pet not be
 * found or the key not be known at that version); a create once its body has arrived (should the
 * body or the key not do, with the body it read: see replayedBody).
 */
export type HotPath = (req: IncomingMessage, res: ServerResponse, fallback: Fallback) => boolean

const REPLAYED_BODY = Symbol('petstore.replayedBody')
const TURN_VERSION = Symbol('petstore.turnVersion')
/** What the hot path leaves on a request it hands to Fastify. */
type HandedOver = IncomingMessage & { [REPLAYED_BODY]?: Buffer; [TURN_VERSION]?: DataVersion }

/**
 * The body the hot path read of a create it took, which the app's `preParsing` hook gives back to
 * Fastify's body parser should the hot path hand the request over; undefined for every other
 * request.
 */
export function replayedBody(req: IncomingMessage): Buffer | undefined {
  return (req as HandedOver)[REPLAYED_BODY]
}

/**
 * The data version the hot path read at the end of the turn for a request it then handed to
 * Fastify: read after the request arrived, so the root hook takes it instead of reading again (on
 * PostgreSQL, a round trip). Undefined for every other request.
 */
export function turnDataVersion(req: IncomingMessage): DataVersion | undefined {
  return (req as HandedOver)[TURN_VERSION]
}

/** Without a data version nothing is cached, and the hot path could answer nothing. */
export function canServeHotPath(store: Store): boolean {
  return store.dataVersion !== undefined
}

const LIST_PATH = '/v1/pets'
const PET_PATH = /^\/v1\/pets\/(-?[0-9]{1,20})$/
/** The query strings the hot path reads itself: known names, values that need no decoding. */
const QUERY_PAIR = /^(limit|status|cursor)=([A-Za-z0-9_-]*)$/

/** The query as the route would see it, or null when the hot path should not judge it. */
function parseListQuery(search: string): Record<string, string> | null {
  const query: Record<string, string> = {}
  if (search === '') return query
  for (const pair of search.split('&')) {
    const m = QUERY_PAIR.exec(pair)
    if (m === null || m[1]! in query) return null
    query[m[1]!] = m[2]!
  }
  return query
}

export function createHotPath(o: HotPathOptions): HotPath {
  const { store, pages, pets, logger, metrics } = o
  const { admit } = o.auth
  const logCompleted = requestLineWriter(logger)
  const getPetJsonAt = store.getPetJsonAt?.bind(store)
  // The routes' own validators: the app's compiler hands out what it compiled for them.
  const validateQuery = o.compileValidator({
    schema: ListPetsQuery,
    httpPart: 'querystring',
  } as never) as (query: unknown) => boolean
  const validateParams = o.compileValidator({
    schema: PetIdParams,
    httpPart: 'params',
  } as never) as (params: unknown) => boolean
  const validateNewPet = o.compileValidator({
    schema: NewPet,
    httpPart: 'body',
  } as never) as (body: unknown) => boolean
  // Compiled at the first create rather than at start-up (~4 ms).
  let serializePet: ((pet: PetRecord) => string) | undefined
  const petJson = (pet: PetRecord): string => {
    serializePet ??= compileSerializer<PetRecord>(Pet)
    return serializePet(pet)
  }
  // What follows the request id, fixed for the process (the hooks' header names are distinct).
  const rootHeaders = ['cache-control', 'no-store', ...flat(o.transport)]
  const vary = o.varyOrigin ? ['vary', 'Origin'] : []
  const afterId = [...rootHeaders, ...vary]
  const afterIdDeprecated = [...rootHeaders, ...flat(o.deprecation), ...vary]
  /** The headers the hooks set, in their order: root (id, cache, transport, deprecation), CORS, auth. */
  const hookHeaders = (id: string, admitted: Admitted, deprecated: boolean): string[] => {
    const headers = ['x-request-id', id]
    for (const h of deprecated ? afterIdDeprecated : afterId) headers.push(h)
    headers.push('ratelimit-policy', admitted.rateLimitPolicy, 'ratelimit', admitted.rateLimit)
    return headers
  }

  /**
   * What makes any request Fastify's, whatever its operation: CORS (`Origin`), a chunked body,
   * a Host or Authorization the edge refuses (edge.ts), a drain.
   */
  const leftToFastify = (req: IncomingMessage): boolean => {
    const h = req.headers
    return (
      h.origin !== undefined ||
      h['transfer-encoding'] !== undefined ||
      edgeViolation(req) !== null ||
      o.isDraining()
    )
  }

  /** Whether a list or get may be the hot path's: no body, nothing leftToFastify. */
  const plainRead = (req: IncomingMessage): boolean =>
    req.headers['content-length'] === undefined && !leftToFastify(req)

  // Reads (and creates' key checks) wait for the end of the event-loop turn (the check phase),
  // where the data version is read once for all of them. That is as exact as a read per
  // request: by then every request of the turn has been received, so any commit acknowledged to
  // a client before it sent one of them, by this process or another, happened before the version
  // was read, and the answer includes it. It saves a read per request but the first of each
  // turn: on SQLite a pread, on PostgreSQL a round trip (docs/performance.md).
  let reads: Read[] = []
  // Answers wait for the end of the turn too, and go out together. Sent one by one, each write
  // wakes the client's side of the loopback or NIC path on its own; sent together, the first
  // wakes it and the rest find it awake: more requests per second, less CPU for each
  // (docs/performance.md).
  let answers: Answer[] = []
  let turnScheduled = false
  const endOfTurn = () => {
    if (reads.length > 0) answerReads()
    // Cleared only now: the answers the reads just queued go out below, not a turn later.
    turnScheduled = false
    sendAnswers()
  }
  const atEndOfTurn = () => {
    if (!turnScheduled) {
      turnScheduled = true
      setImmediate(endOfTurn)
    }
  }
  const answerReads = () => {
    const turn = reads
    reads = []
    const version = readDataVersion(store)
    if (version instanceof Promise) version.then((v) => answerTurn(turn, v))
    else answerTurn(turn, version)
  }
  const answerTurn = (turn: Read[], version: DataVersion | undefined) => {
    for (const r of turn) {
      let answered = false
      try {
        answered = version !== undefined && r.answer(version)
      } catch {
        // Every check that can throw comes before the first effect (the rate-limit count), so
        // Fastify can still take the request from the start and give the error its answer.
      }
      if (!answered) {
        ;(r.req as HandedOver)[TURN_VERSION] = version
        r.fallback(r.req, r.res)
      }
    }
  }
  const sendAnswers = () => {
    const batch = answers
    answers = []
    for (const a of batch) {
      try {
        send(a)
      } catch (err) {
        // Nothing in send is known to throw; should it, the client sees its connection end
        // rather than wait forever, and the log says why.
        logger.error({ err, requestId: a.requestId }, 'hot path failed to answer')
        if (!a.res.headersSent) a.res.destroy()
      }
    }
  }
  const send = (a: Answer) => {
    a.headers.push(
      'content-type',
      JSON_CONTENT_TYPE,
      'content-length',
      String(Buffer.byteLength(a.body)),
    )
    a.res.writeHead(a.status, a.headers)
    a.res.end(a.body)
    const elapsedMs = performance.now() - a.started
    const method = a.req.method!
    metrics.requestCompleted({ operation: a.operation, method, status: a.status }, elapsedMs / 1000)
    metrics.hotPathAnswered()
    logCompleted({
      requestId: a.requestId,
      operation: a.operation,
      method,
      url: a.req.url,
      status: a.status,
      elapsedMs,
      apiKeyName: a.apiKeyName,
      remoteAddress: o.originOf(a.req).ip,
    })
  }
  const finish = (a: Answer) => {
    answers.push(a)
    atEndOfTurn()
  }
  const defer = (
    req: IncomingMessage,
    res: ServerResponse,
    fallback: Fallback,
    answer: Read['answer'],
  ) => {
    reads.push({ req, res, fallback, answer })
    atEndOfTurn()
  }

  const list = (
    req: IncomingMessage,
    res: ServerResponse,
    fallback: Fallback,
    search: string,
  ): boolean => {
    const started = performance.now()
    const parsed = parseListQuery(search)
    if (parsed === null || !validateQuery(parsed) || !plainRead(req)) return false
    const query = parsed as unknown as ListPetsQueryType
    defer(req, res, fallback, (version) => answerList(req, res, started, query, version))
    return true
  }

  const answerList = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    query: ListPetsQueryType,
    version: DataVersion,
  ): boolean => {
    const key = ReadCache.pageKey(query.limit, query.status, query.cursor)
    const page = pages.get(key, version.pets)
    if (page === undefined) return false
    const admitted = admit(req.headers.authorization, version.keys)
    if (admitted === null) return false

    const id = requestId(req)
    const headers = hookHeaders(id, admitted, false)
    if (page.nextCursor !== null) {
      const { protocol, host } = o.originOf(req)
      headers.push('link', nextPageLink(protocol, host, o.fallbackOrigin, query, page.nextCursor))
    }
    finish({
      req,
      res,
      started,
      status: 200,
      operation: 'listPets',
      apiKeyName: admitted.key.name,
      requestId: id,
      headers,
      body: page.body,
    })
    return true
  }

  const get = (
    req: IncomingMessage,
    res: ServerResponse,
    fallback: Fallback,
    petId: string,
  ): boolean => {
    const started = performance.now()
    const params: Record<string, unknown> = { petId }
    if (!validateParams(params) || isSunset(o.clock.nowMs()) || !plainRead(req)) return false
    const id = params.petId as bigint
    defer(req, res, fallback, (version) => answerGet(req, res, started, id, version))
    return true
  }

  const answerGet = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    petId: bigint,
    version: DataVersion,
  ): boolean => {
    // The body as the route's serializer wrote it: cached by the route, or from a store that
    // reads in the same turn (SQLite's PET_JSON_BY_ID).
    const body =
      pets.get(ReadCache.petKey(petId), version.pets)?.body ??
      getPetJsonAt?.(petId, version.pets) ??
      null
    if (body === null) return false
    const admitted = admit(req.headers.authorization, version.keys)
    if (admitted === null) return false

    const id = requestId(req)
    o.deprecatedCalls.record(
      { warn: (fields, msg) => logger.warn({ requestId: id, ...fields }, msg) },
      'getPet',
      admitted.key,
    )
    const headers = hookHeaders(id, admitted, true)
    finish({
      req,
      res,
      started,
      status: 200,
      operation: 'getPet',
      apiKeyName: admitted.key.name,
      requestId: id,
      headers,
      body,
    })
    return true
  }

  /**
   * Whether a create's headers leave its answer to the hot path: a plain JSON body of a declared
   * length within the limit, no Idempotency-Key (its claim and replay stay in the service's hands
   * through the route), nothing CORS, the edge or draining would change. A Content-Type with
   * parameters is the route's to judge (json-body.ts isAcceptedJsonCharset).
   */
  const plainCreate = (req: IncomingMessage): boolean => {
    const h = req.headers
    const length = h['content-length']
    return (
      h['content-type'] === 'application/json' &&
      length !== undefined &&
      /^[1-9][0-9]{0,5}$/.test(length) &&
      Number(length) <= o.bodyLimit &&
      h['idempotency-key'] === undefined &&
      h['content-encoding'] === undefined &&
      h.expect === undefined &&
      !leftToFastify(req)
    )
  }

  /**
   * The pet to create, or null when the body is one the route must judge (not JSON, not a
   * NewPet, a U+0000 in the name, which the service refuses).
   */
  const newPet = (body: Buffer): NewPetRecord | null => {
    let parsed: unknown
    try {
      parsed = parseJsonBody(body)
    } catch {
      return null
    }
    if (!validateNewPet(parsed)) return null
    const pet = parsed as NewPetBody
    return isStorableName(pet.name) ? newPetOf(pet) : null
  }

  const create = (req: IncomingMessage, res: ServerResponse, fallback: Fallback): boolean => {
    // No byte of a body is read for a key not known here: the auth hook refuses it first.
    if (!plainCreate(req) || !o.auth.recognises(req.headers.authorization)) return false
    const started = performance.now()
    const length = Number(req.headers['content-length'])
    const chunks: Buffer[] = []
    let received = 0
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      received += chunk.length
    })
    // The client went away before its body was whole: there is no one left to answer, and
    // nothing was counted or created.
    req.on('error', () => {})
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)
      // Kept before anything can hand the request over: Fastify's parser could not read it again.
      ;(req as HandedOver)[REPLAYED_BODY] = body
      let pet: NewPetRecord | null = null
      try {
        pet = received === length ? newPet(body) : null
      } catch {
        // Nothing here is known to throw; should it, Fastify takes the request from the start.
      }
      if (pet === null) {
        fallback(req, res)
        return
      }
      // The key is checked at the end of the turn with the turn's data version, as reads are: the
      // version read (2.7% of the create profile when it was per create) and, after each group
      // commit, the key's re-read are then once per turn rather than once per create.
      const created = pet
      defer(req, res, fallback, (version) => submit(req, res, started, created, version))
    })
    return true
  }

  /** Admits a create as the auth hook would and hands it to the store, or returns false. */
  const submit = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    pet: NewPetRecord,
    version: DataVersion,
  ): boolean => {
    const admitted = admit(req.headers.authorization, version.keys)
    if (admitted === null) return false
    const id = requestId(req)
    /** `extra`: a flat header list, set over the hooks' headers as the route's reply would. */
    const answer = (status: number, extra: string[], body: string) => {
      const all = hookHeaders(id, admitted, false)
      for (let i = 0; i < extra.length; i += 2) setHeader(all, extra[i]!, extra[i + 1]!)
      finish({
        req,
        res,
        started,
        status,
        operation: 'createPet',
        apiKeyName: admitted.key.name,
        requestId: id,
        headers: all,
        body,
      })
    }
    const failed = (err: unknown) => {
      // The store refused the commit after the request was counted: the routes' error
      // handler's answer, from the same mapping.
      const { body, headers } = toErrorBody(err as FastifyError, logger.child({ requestId: id }))
      answer(body.status, flat(headers), JSON.stringify(body))
    }
    o.service.createThen(
      pet,
      (created) => {
        let body: string
        try {
          body = petJson(created)
        } catch (err) {
          failed(err)
          return
        }
        answer(201, ['location', `/v1/pets/${created.id}`], body)
      },
      failed,
    )
    return true
  }

  return (req, res, fallback) => {
    if (req.httpVersionMajor !== 1) return false
    if (req.method === 'POST') return req.url === LIST_PATH && create(req, res, fallback)
    if (req.method !== 'GET') return false
    const url = req.url ?? ''
    if (!url.startsWith(LIST_PATH)) return false
    try {
      if (url.length === LIST_PATH.length) return list(req, res, fallback, '')
      if (url.charCodeAt(LIST_PATH.length) === 63 /* ? */) {
        return list(req, res, fallback, url.slice(LIST_PATH.length + 1))
      }
      const m = PET_PATH.exec(url)
      return m !== null && get(req, res, fallback, m[1]!)
    } catch {
      // Nothing here has had an effect yet: Fastify takes the request from the start.
      return false
    }
  }
}

/**
 * Puts the hot path ahead of Fastify on its server: Fastify's handler, the server's one `request`
 * listener, sees every request the hot path declines. `app.inject` never comes here, which is why
 * the hot path's tests use a real socket.
 */
export function serveHotPathFirst(server: Server, hot: HotPath): void {
  const listeners = server.listeners('request')
  if (listeners.length !== 1) {
    throw new Error(`expected Fastify's one request listener, found ${listeners.length}`)
  }
  const fastify = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void
  server.removeListener('request', fastify)
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!hot(req, res, fastify)) fastify(req, res)
  })
}
