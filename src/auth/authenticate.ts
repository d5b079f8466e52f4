// The onRequest hook that authenticates every /v1 request and applies the rate limits.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { ApiError } from '../errors.js'
import { isApiTarget } from '../http/request-target.js'
import type { ApiKeyVerifier, AuthenticatedKey } from './api-keys.js'
import { Breaker } from './breaker.js'
import {
  type Limit,
  type LimitState,
  MemoryWindows,
  memoryCounter,
  type RateCounter,
  sharedCounter,
} from './rate-counters.js'
import { pingWithinBound, REDIS_BREAKER_OPEN_MS, RedisWindows } from './redis.js'

export interface AuthOptions {
  verifier: ApiKeyVerifier
  rateLimit: { max: number; windowMs: number }
  authFailureLimit: { max: number; windowMs: number }
  /** Hears of each request refused with 429, by policy (for metrics). */
  onRateLimited?: (policy: 'default' | 'auth-failures') => void
  /**
   * Where the counters live: one budget for every process that shares this Redis. Without it,
   * each process counts on its own, in memory.
   */
  redis?: Redis
}

const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="petstore", error="invalid_token"'

/**
 * Default deny: a route answers without a key only when it declares itself public, whatever the
 * spelling of the target that reached it. A request no route matched is judged on its target read
 * as loosely as any router could read it, so that it gets 401 rather than a 404 that confirms
 * which API paths exist.
 */
export function requiresKey(request: FastifyRequest): boolean {
  return request.is404 ? isApiTarget(request.url) : request.routeOptions.config.public !== true
}

/**
 * The key that authenticated the request. Handlers take their key from here: a route that needs
 * one cannot run without it, whatever hook order or registration mistake would let it.
 */
export function authenticatedKey(request: FastifyRequest): AuthenticatedKey {
  const key = request.apiKey
  if (key === null) throw new Error('a handler that needs an API key ran without one')
  return key
}

/** Printable ASCII without spaces: what a token may be. */
const TOKEN = /^[\x21-\x7e]+$/

/** The bearer token, '' for a Bearer header without a usable token, null for no Bearer header. */
function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null
  // The usual header, `Bearer <token>` with one space and nothing around it, without a regex
  // match and its substrings: what the general rule below would make of it, and nothing else.
  if (header.startsWith('Bearer ')) {
    const token = header.slice(7)
    if (TOKEN.test(token)) return token
  }
  const m = /^Bearer(?: +(.*))?$/i.exec(header.trim())
  if (!m) return null
  const token = (m[1] ?? '').trim()
  return TOKEN.test(token) ? token : ''
}

/** `RateLimit-Policy` of draft-ietf-httpapi-ratelimit-headers, e.g. `"default";q=6000;w=60`. */
function rateLimitPolicyField(policy: string, limit: Limit): string {
  return `"${policy}";q=${limit.max};w=${Math.ceil(limit.windowMs / 1000)}`
}

/** `RateLimit` of the same draft: what is left of the window, e.g. `"default";r=5999;t=60`. */
function rateLimitField(policy: string, s: LimitState): string {
  return `"${policy}";r=${s.remaining};t=${Math.max(0, s.ttlInSeconds)}`
}

function setRateLimitFields(reply: FastifyReply, policy: string, limit: Limit, s: LimitState) {
  reply.header('ratelimit-policy', rateLimitPolicyField(policy, limit))
  reply.header('ratelimit', rateLimitField(policy, s))
}

function rateLimited(s: LimitState, message: string): ApiError {
  return new ApiError('rate_limited', message, {
    'retry-after': String(Math.max(1, s.ttlInSeconds)),
  })
}

/** A request the hot path may answer, as authentication and the rate limit saw it. */
export interface Admitted {
  key: AuthenticatedKey
  /** The values of the `RateLimit-Policy` and `RateLimit` response fields. */
  rateLimitPolicy: string
  rateLimit: string
}

/**
 * Admits, synchronously, a request whose key matched before and holds at `version` (recall)
 * and whose budget has room, counting it as the hook would. Anything else returns null with
 * nothing counted, so that the hook can take the request from the start: an unknown key, a
 * failed or missing header, a budget used up.
 */
export type Admit = (
  authorization: string | undefined,
  version: number | undefined,
) => Admitted | null

/** What the hot path needs of authentication, when the counters live in this process. */
export interface HotAuth {
  admit: Admit
  /** Whether the key matched before, counting nothing: a create's body is read only then. */
  recognises(authorization: string | undefined): boolean
}

/** Longest subject kept as it is in a counter's name; a longer one is named by its digest. */
const MAX_SUBJECT_LENGTH = 64

/**
 * A counter's name: its policy and what it counts, a key id or a client address. An address
 * from X-Forwarded-For may be any text a client sends, so its length is bounded here, in
 * memory and in Redis alike.
 */
export function counterName(policy: 'default' | 'auth-failures', subject: string): string {
  return subject.length <= MAX_SUBJECT_LENGTH
    ? `${policy}:${subject}`
    : `${policy}:sha256:${createHash('sha256').update(subject).digest('base64url')}`
}

const perKeyCounterName = (keyId: string) => counterName('default', keyId)
/** Counter names remembered at most, as many as the verifier remembers keys. */
const MAX_COUNTER_NAMES = 10_000

/**
 * Registers the authentication hooks; returns the hot path's part when the counters live in this
 * process (with Redis every count is a round trip, so there is no synchronous answer).
 */
export async function registerAuth(
  app: FastifyInstance,
  opts: AuthOptions,
): Promise<HotAuth | null> {
  // Counters are named by policy and key id (or client address), never by the key itself, and
  // applied from our own hook so that authentication always comes first.
  const perKeyName = (req: FastifyRequest) => perKeyCounterName(authenticatedKey(req).id)
  const perAddressName = (req: FastifyRequest) => counterName('auth-failures', req.ip)
  let perKey: RateCounter
  let perAddress: RateCounter
  let hot: HotAuth | null = null
  if (opts.redis) {
    const redis = opts.redis
    const breaker = new Breaker({
      openMs: REDIS_BREAKER_OPEN_MS,
      probe: () => pingWithinBound(redis),
      onOpen: (err) =>
        app.log.warn(
          { err },
          'rate-limit store (Redis) unreachable: limits are counted per process until it answers',
        ),
      // At the level of the outage's line, so that a log read at `warn` shows its end too.
      onClose: () => app.log.warn('rate-limit store (Redis) reachable again: limits are shared'),
    })
    // Not connected at start: openRedis has said so already.
    if (redis.status !== 'ready') breaker.startOpen()
    const shared = (limit: Limit, nameOf: (request: FastifyRequest) => string) => {
      const windows = new RedisWindows(redis, limit)
      return sharedCounter((name) => windows.take(name), new MemoryWindows(limit), breaker, nameOf)
    }
    perKey = shared(opts.rateLimit, perKeyName)
    perAddress = shared(opts.authFailureLimit, perAddressName)
  } else {
    const perKeyWindows = new MemoryWindows(opts.rateLimit)
    perKey = memoryCounter(perKeyWindows, perKeyName)
    perAddress = memoryCounter(new MemoryWindows(opts.authFailureLimit), perAddressName)
    const policy = rateLimitPolicyField('default', opts.rateLimit)
    // Each key's counter name, made once: a name built per request is a new string, hashed again
    // at each lookup.
    const counterNames = new Map<string, string>()
    const admit: Admit = (authorization, version) => {
      const token = bearerToken(authorization)
      const key = token ? opts.verifier.recall(token, version) : undefined
      if (key === undefined) return null
      let name = counterNames.get(key.id)
      if (name === undefined) {
        if (counterNames.size >= MAX_COUNTER_NAMES) counterNames.clear()
        name = perKeyCounterName(key.id)
        counterNames.set(key.id, name)
      }
      const state = perKeyWindows.takeIfRoom(name)
      if (state === null) return null
      return { key, rateLimitPolicy: policy, rateLimit: rateLimitField('default', state) }
    }
    hot = {
      admit,
      recognises: (authorization) => {
        const token = bearerToken(authorization)
        return token ? opts.verifier.knows(token) : false
      },
    }
  }

  app.decorateRequest('apiKey', null)
  app.addHook('onRequest', async (request, reply) => {
    if (!requiresKey(request)) return
    const token = bearerToken(request.headers.authorization)
    const key = token ? await opts.verifier.verify(token, request.dataVersion?.keys) : null
    if (key === null) {
      const counted = perAddress(request)
      const failures = counted instanceof Promise ? await counted : counted
      setRateLimitFields(reply, 'auth-failures', opts.authFailureLimit, failures)
      if (failures.isExceeded) {
        opts.onRateLimited?.('auth-failures')
        throw rateLimited(failures, 'too many failed authentication attempts from this address')
      }
      throw token === null
        ? new ApiError('unauthorized', 'an API key is required: send Authorization: Bearer <key>', {
            'www-authenticate': CHALLENGE,
          })
        : new ApiError('unauthorized', 'the API key is not valid (unknown, revoked or expired)', {
            'www-authenticate': INVALID_TOKEN_CHALLENGE,
          })
    }
    request.apiKey = key
    const counted = perKey(request)
    const usage = counted instanceof Promise ? await counted : counted
    setRateLimitFields(reply, 'default', opts.rateLimit, usage)
    if (usage.isExceeded) {
      opts.onRateLimited?.('default')
      throw rateLimited(usage, 'rate limit of this API key exceeded')
    }
  })
  // The last check before any handler: nothing that needs a key gets past it without one.
  app.addHook('preHandler', (request, _reply, done) => {
    if (requiresKey(request)) authenticatedKey(request)
    done()
  })
  return hot
}
