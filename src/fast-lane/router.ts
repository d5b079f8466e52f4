// Which requests the fast lane takes: the three hot operations in their plainest form, decided on
// the request line and headers alone, before anything has an effect. Every other request is
// Fastify's, untouched.
import type { IncomingMessage } from 'node:http'
import type { FastifySchemaCompiler } from 'fastify'
import { edgeViolation } from '../http/edge.js'
import { ListPetsQuery, type ListPetsQueryType, PetIdParams } from '../pets/schemas.js'

/** A request the fast lane takes, with what it parsed of it. */
export type LaneRoute =
  | { operation: 'listPets'; query: ListPetsQueryType }
  | { operation: 'getPet'; petId: bigint }
  | { operation: 'createPet' }

export interface LaneRouterOptions {
  /** The app's validator compiler: the routes' own validators. */
  compileValidator: FastifySchemaCompiler<unknown>
  /** The app's body limit: a larger body is Fastify's to refuse. */
  bodyLimit: number
  isDraining: () => boolean
  /** Whether the key matched before: a create's body is read only for such a key. */
  recognises: (authorization: string | undefined) => boolean
}

const LIST_PATH = '/v1/pets'
const PET_PATH = /^\/v1\/pets\/(-?[0-9]{1,20})$/
/** Query pairs read here: known names, values that need no decoding. */
const QUERY_PAIR = /^(limit|status|cursor)=([A-Za-z0-9_-]*)$/
const CONTENT_LENGTH = /^[1-9][0-9]{0,5}$/

/** The query as the route would see it, or null when the route should judge it. */
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

/** Returns what the fast lane takes of a request, or null for Fastify. */
export function laneRouter(o: LaneRouterOptions): (req: IncomingMessage) => LaneRoute | null {
  const validator = (schema: unknown, httpPart: string) =>
    o.compileValidator({ schema, httpPart } as never) as (data: unknown) => boolean
  const validQuery = validator(ListPetsQuery, 'querystring')
  const validParams = validator(PetIdParams, 'params')

  /** CORS, a chunked or encoded body, what the edge refuses, a drain: the routes' to handle. */
  const leftToFastify = (req: IncomingMessage): boolean => {
    const h = req.headers
    return (
      h.origin !== undefined ||
      h['transfer-encoding'] !== undefined ||
      h['content-encoding'] !== undefined ||
      edgeViolation(req) !== null ||
      o.isDraining()
    )
  }
  const plainRead = (req: IncomingMessage) =>
    req.headers['content-length'] === undefined && !leftToFastify(req)
  /**
   * A plain JSON body of a declared length within the limit, no Idempotency-Key (its claim and
   * replay are the route's), and a key seen before.
   */
  const plainCreate = (req: IncomingMessage): boolean => {
    const h = req.headers
    const length = h['content-length']
    return (
      h['content-type'] === 'application/json' &&
      length !== undefined &&
      CONTENT_LENGTH.test(length) &&
      Number(length) <= o.bodyLimit &&
      h['idempotency-key'] === undefined &&
      h.expect === undefined &&
      !leftToFastify(req) &&
      o.recognises(h.authorization)
    )
  }
  const list = (req: IncomingMessage, search: string): LaneRoute | null => {
    const query = parseListQuery(search)
    if (query === null || !validQuery(query) || !plainRead(req)) return null
    return { operation: 'listPets', query: query as unknown as ListPetsQueryType }
  }
  const get = (req: IncomingMessage, url: string): LaneRoute | null => {
    const m = PET_PATH.exec(url)
    if (m === null) return null
    const params: Record<string, unknown> = { petId: m[1] }
    if (!validParams(params) || !plainRead(req)) return null
    return { operation: 'getPet', petId: params.petId as bigint }
  }

  return (req) => {
    if (req.httpVersionMajor !== 1) return null
    const url = req.url ?? ''
    if (req.method === 'POST') {
      return url === LIST_PATH && plainCreate(req) ? { operation: 'createPet' } : null
    }
    if (req.method !== 'GET' || !url.startsWith(LIST_PATH)) return null
    if (url.length === LIST_PATH.length) return list(req, '')
    if (url.charCodeAt(LIST_PATH.length) === 63 /* ? */) {
      return list(req, url.slice(LIST_PATH.length + 1))
    }
    return get(req, url)
  }
}
