// The onRequest hook that authenticates every /v1 request and applies the rate limits.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { ApiError } from '../errors.js'
import { isApiTarget } from '../http/request-target.js'
import type { ApiKeyVerifier, AuthenticatedKey } from './api-keys.js'
import {
  type Limit,
  type LimitState,
  MemoryWindows,
  memoryCounter,
  pluginCounter,
  type RateCounter,
} from './rate-counters.js'

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

/** Prefix of every counter in Redis; the rest names the policy and the key id or address. */
export const REDIS_NAMESPACE = 'petstore-rl:'

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

function setRateLimitFields(
  reply: FastifyReply,
  policy: string,
  limit: Limit,
  s: LimitState | null,
) {
  reply.header('ratelimit-policy', rateLimitPolicyField(policy, limit))
  // With the counter store unreachable the remaining budget is unknown, so it is not claimed.
  if (s) reply.header('ratelimit', rateLimitField(policy, s))
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

const perKeyCounterName = (keyId: string | undefined) => `default:${keyId}`
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
  const perKeyName = (req: FastifyRequest) => perKeyCounterName(req.apiKey?.id)
  const perAddressName = (req: FastifyRequest) => `auth-failures:${req.ip}`
  let perKey: RateCounter
  let perAddress: RateCounter
  let hot: HotAuth | null = null
  if (opts.redis) {
    await app.register(rateLimit, { global: false, redis: opts.redis, nameSpace: REDIS_NAMESPACE })
    perKey = pluginCounter(app, opts.rateLimit, perKeyName)
    perAddress = pluginCounter(app, opts.authFailureLimit, perAddressName)
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

  // An unreachable counter store (Redis down) fails open: requests are served without a limit
  // rather than refused, with one warning when it starts and one line when it is back.
  let storeFailing = false
  const settle = async (
    pending: Promise<LimitState>,
    request: FastifyRequest,
  ): Promise<LimitState | null> => {
    try {
      const state = await pending
      if (storeFailing) {
        storeFailing = false
        request.log.info('rate-limit store reachable again: limits apply')
      }
      return state
    } catch (err) {
      if (!storeFailing) {
        storeFailing = true
        request.log.warn({ err }, 'rate-limit store unreachable: requests are served unlimited')
      }
      return null
    }
  }
  const count = (counter: RateCounter, request: FastifyRequest) => {
    const state = counter(request)
    return state instanceof Promise ? settle(state, request) : state
  }

  app.decorateRequest('apiKey', null)
  app.addHook('onRequest', async (request, reply) => {
    if (!requiresKey(request)) return
    const token = bearerToken(request.headers.authorization)
    const key = token ? await opts.verifier.verify(token, request.dataVersion?.keys) : null
    if (key === null) {
      const counted = count(perAddress, request)
      const failures = counted instanceof Promise ? await counted : counted
      setRateLimitFields(reply, 'auth-failures', opts.authFailureLimit, failures)
      if (failures?.isExceeded) {
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
    const counted = count(perKey, request)
    const usage = counted instanceof Promise ? await counted : counted
    setRateLimitFields(reply, 'default', opts.rateLimit, usage)
    if (usage?.isExceeded) {
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
