// A typed client for the Pet Store API: openapi-fetch over the generated types (./schema.ts), with
// int64 values exact both ways. JSON.parse would round ids beyond 2^53, so bodies are decoded with
// lossless-json: a number under a property the document declares `format: int64` (`id`,
// `categoryId`) becomes a BigInt, any other number a JS number, and a number that a JS number
// cannot hold exactly is an error rather than a rounded value. The generated types say `bigint`
// for exactly those properties. Request bodies are written with every digit of a BigInt.

import { isInteger, isLosslessNumber, parse, stringify, toSafeNumberOrThrow } from 'lossless-json'
import createClient, { type Client, type ParseAs } from 'openapi-fetch'
import { type components, int64Properties, type paths } from './schema.js'

export type { components, paths }
export type Pet = components['schemas']['Pet']
export type NewPet = components['schemas']['NewPet']
export type PetStatus = components['schemas']['PetStatus']
/** The body of every error response: `{ code, message, status }`. */
export type ErrorBody = components['schemas']['Error']
export type PetstoreApi = Client<paths>

export interface PetstoreClientOptions {
  /** The API's root, ending in `/v1`, e.g. `https://petstore.example.com/v1`. */
  baseUrl: string
  /** Sent as `Authorization: Bearer <apiKey>` on every request. */
  apiKey: string
  /** Defaults to the global fetch. */
  fetch?: (request: Request) => Promise<Response>
  /** How the paging helpers wait out 429 and 503 (see PagingRetry); `false`: not at all. */
  retry?: PagingRetry | false
}

/**
 * A page answered 429 `rate_limited` or 503 `service_unavailable` with `Retry-After` is asked for
 * again once that time has passed, within two bounds; past either, the answer is thrown as a
 * PetstoreError.
 */
export interface PagingRetry {
  /** Longest `Retry-After` waited out, in seconds (default 60: one default rate-limit window). */
  maxWaitSeconds?: number
  /** Retries of one page before its answer is thrown (default 5). */
  maxRetries?: number
  /** Waits `ms` milliseconds (default: a timer); a test may pass its own. */
  sleep?: (ms: number) => Promise<void>
}

const DEFAULT_MAX_WAIT_SECONDS = 60
const DEFAULT_MAX_RETRIES = 5

export interface ListAllPetsOptions {
  status?: PetStatus
  /** Page size, 1 to 100 (the service's default is 20). */
  limit?: number
}

export interface PetstoreClient {
  /** The typed openapi-fetch client: `api.GET('/pets', ...)`, `api.POST('/pets', ...)`, ... */
  api: PetstoreApi
  /**
   * Every pet in ascending id order, fetched a page at a time by following `rel="next"`; a page
   * answered 429 or 503 with `Retry-After` is asked for again after that wait (PagingRetry).
   */
  listAllPets(options?: ListAllPetsOptions): AsyncGenerator<Pet, void, undefined>
}

/** An error response, with its `{ code, message, status }` body when it had one. */
export class PetstoreError extends Error {
  readonly status: number
  readonly body: ErrorBody | undefined

  /** `body` is what the client returned as `error`: the text instead when it was not JSON. */
  constructor(response: Response, body: ErrorBody | string | undefined) {
    const errorBody = typeof body === 'object' ? body : undefined
    super(
      errorBody
        ? `${errorBody.status} ${errorBody.code}: ${errorBody.message}`
        : `HTTP ${response.status} ${response.statusText}`.trimEnd(),
    )
    this.name = 'PetstoreError'
    this.status = response.status
    this.body = errorBody
  }
}

const INT64_PROPERTIES: ReadonlySet<string> = new Set(int64Properties)
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** JSON text to a value, by the rule at the top of this file. */
export function parseExactJson(text: string): unknown {
  return parse(text, (key, value) => {
    if (!isLosslessNumber(value)) return value
    if (!INT64_PROPERTIES.has(key)) return toSafeNumberOrThrow(value.value)
    const n = isInteger(value.value) ? BigInt(value.value) : null
    if (n === null || n < INT64_MIN || n > INT64_MAX) {
      throw new SyntaxError(`"${key}" is not a 64-bit integer: ${value.value}`)
    }
    return n
  })
}

/** A value to JSON text; a BigInt becomes an integer literal with all of its digits. */
export function stringifyExactJson(value: unknown): string {
  const text = stringify(value)
  if (text === undefined) throw new TypeError('the request body is not representable as JSON')
  return text
}

type LooseInit = { parseAs?: ParseAs; [option: string]: unknown }
type LooseResult = { data?: unknown; error?: unknown; response: Response }
type LooseRequest = (method: string, url: string, init?: LooseInit) => Promise<LooseResult>

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const

/**
 * openapi-fetch decodes bodies with JSON.parse and offers no hook to replace it, so each call asks
 * it for the text and decodes that here. Error bodies it always JSON.parses; their text is kept by
 * a middleware that runs after any other, so it sees the response the caller gets.
 */
function withExactJson(inner: PetstoreApi): PetstoreApi {
  const errorTexts = new WeakMap<Response, string>()
  inner.use({
    async onResponse({ response }) {
      if (!response.ok) errorTexts.set(response, await response.clone().text())
      return undefined
    },
  })
  const innerRequest = inner.request as unknown as LooseRequest
  const request: LooseRequest = async (method, url, init = {}) => {
    if (init.parseAs !== undefined && init.parseAs !== 'json') {
      return innerRequest(method, url, init)
    }
    const result = await innerRequest(method, url, { ...init, parseAs: 'text' })
    const { response } = result
    if (response.ok) {
      const data = typeof result.data === 'string' ? parseExactJson(result.data) : result.data
      return { data, response }
    }
    const text = errorTexts.get(response)
    if (text === undefined || text === '') return result
    try {
      return { error: parseExactJson(text), response }
    } catch {
      // Not JSON (a proxy's HTML page, say): the text itself, as openapi-fetch gives it.
      return { error: text, response }
    }
  }
  const exact: Record<string, unknown> = {
    request,
    use: inner.use.bind(inner),
    eject: inner.eject.bind(inner),
  }
  for (const method of METHODS) {
    exact[method] = (url: string, init?: LooseInit) => request(method, url, init)
  }
  return exact as unknown as PetstoreApi
}

/**
 * Milliseconds a `Retry-After` header asks for: delay-seconds, or an HTTP date (RFC 9110, 10.2.3);
 * null when absent or unreadable.
 */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (header === null) return null
  const value = header.trim()
  if (/^\d+$/.test(value)) return Number(value) * 1000
  // Every HTTP date form begins with the day's name; Date.parse alone would take `-1` as a year.
  const date = /^[A-Za-z]/.test(value) ? Date.parse(value) : Number.NaN
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}

/** How long to wait before asking for the page again, or null when its answer is final. */
function retryDelay(
  response: Response,
  retries: number,
  retry: PagingRetry | false,
): number | null {
  if (retry === false || (response.status !== 429 && response.status !== 503)) return null
  if (retries >= (retry.maxRetries ?? DEFAULT_MAX_RETRIES)) return null
  const ms = retryAfterMs(response.headers.get('retry-after'))
  if (ms === null || ms > (retry.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS) * 1000) return null
  return ms
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The target of a `rel="next"` link in a Link header (RFC 8288), or null. */
export function nextLink(header: string | null): string | null {
  if (header === null) return null
  for (const m of header.matchAll(/<([^>]*)>([^,<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(m[2]!)
    const relations = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/)
    if (relations.includes('next')) return m[1]!
  }
  return null
}

export function createPetstoreClient(options: PetstoreClientOptions): PetstoreClient {
  const api = withExactJson(
    createClient<paths>({
      baseUrl: options.baseUrl,
      headers: { Authorization: `Bearer ${options.apiKey}` },
      bodySerializer: stringifyExactJson,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    }),
  )

  const retry = options.retry ?? {}
  const sleep = (retry === false ? undefined : retry.sleep) ?? timer

  /** One page; a 429 or 503 with `Retry-After` is waited out, within `retry`'s bounds. */
  async function page(query: ListAllPetsOptions & { cursor?: string }) {
    for (let retries = 0; ; retries++) {
      const answer = await api.GET('/pets', { params: { query } })
      if (answer.data !== undefined) return answer
      const delay = retryDelay(answer.response, retries, retry)
      if (delay === null) throw new PetstoreError(answer.response, answer.error)
      await sleep(delay)
    }
  }

  async function* listAllPets(opts: ListAllPetsOptions = {}): AsyncGenerator<Pet, void, undefined> {
    let cursor: string | undefined
    for (;;) {
      const { data, response } = await page({
        ...opts,
        ...(cursor === undefined ? {} : { cursor }),
      })
      yield* data
      const next = nextLink(response.headers.get('link'))
      if (next === null) return
      // Only the opaque cursor is taken from the link, and sent to the configured base URL: the key
      // never goes to a host named by a response (a proxy may rewrite the public origin).
      const nextCursor = new URL(next, options.baseUrl).searchParams.get('cursor')
      if (nextCursor === null) throw new Error(`the next link has no cursor: ${next}`)
      cursor = nextCursor
    }
  }

  return { api, listAllPets }
}
