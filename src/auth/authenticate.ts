// The onRequest hook that authenticates every /v1 request and applies the rate limits.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import type { ApiKeyVerifier } from './api-keys.js'

export interface AuthOptions {
  verifier: ApiKeyVerifier
  rateLimit: { max: number; windowMs: number }
  authFailureLimit: { max: number; windowMs: number }
  /** Hears of each request refused with 429, by policy (for metrics). */
  onRateLimited?: (policy: 'default' | 'auth-failures') => void
}

interface LimitState {
  max: number
  remaining: number
  ttlInSeconds: number
  isExceeded: boolean
}

const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="petstore", error="invalid_token"'

/** Routes outside /v1 answer without a key unless they say otherwise; routes inside need one. */
function requiresAuth(request: FastifyRequest): boolean {
  if (request.routeOptions.config.public === true) return false
  const path = request.url.split('?', 1)[0]!
  return path === '/v1' || path.startsWith('/v1/')
}

/** The bearer token, '' for a Bearer header without a usable token, null for no Bearer header. */
function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null
  const m = /^Bearer(?: +(.*))?$/i.exec(header.trim())
  if (!m) return null
  const token = (m[1] ?? '').trim()
  return /^[\x21-\x7e]+$/.test(token) ? token : ''
}

/** The two fields of draft-ietf-httpapi-ratelimit-headers, e.g. `"default";q=6000;w=60`. */
function setRateLimitFields(reply: FastifyReply, policy: string, windowMs: number, s: LimitState) {
  const window = Math.ceil(windowMs / 1000)
  reply.header('ratelimit-policy', `"${policy}";q=${s.max};w=${window}`)
  reply.header('ratelimit', `"${policy}";r=${s.remaining};t=${Math.max(0, s.ttlInSeconds)}`)
}

function rateLimited(s: LimitState, message: string): ApiError {
  return new ApiError('rate_limited', message, {
    'retry-after': String(Math.max(1, s.ttlInSeconds)),
  })
}

export async function registerAuth(app: FastifyInstance, opts: AuthOptions): Promise<void> {
  // The plugin keeps the counters (in memory here; a shared store can be given to it later);
  // the limiters are applied from our own hook so that authentication always comes first.
  await app.register(rateLimit, { global: false })
  const perKey = app.createRateLimit({
    max: opts.rateLimit.max,
    timeWindow: opts.rateLimit.windowMs,
    keyGenerator: (req) => `key:${req.apiKey?.id}`,
  })
  const perAddress = app.createRateLimit({
    max: opts.authFailureLimit.max,
    timeWindow: opts.authFailureLimit.windowMs,
    keyGenerator: (req) => `auth-failure:${req.ip}`,
  })

  app.decorateRequest('apiKey', null)
  app.addHook('onRequest', async (request, reply) => {
    if (!requiresAuth(request)) return
    const token = bearerToken(request.headers.authorization)
    const key = token ? await opts.verifier.verify(token) : null
    if (key === null) {
      const failures = (await perAddress(request)) as LimitState
      setRateLimitFields(reply, 'auth-failures', opts.authFailureLimit.windowMs, failures)
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
    const usage = (await perKey(request)) as LimitState
    setRateLimitFields(reply, 'default', opts.rateLimit.windowMs, usage)
    if (usage.isExceeded) {
      opts.onRateLimited?.('default')
      throw rateLimited(usage, 'rate limit of this API key exceeded')
    }
  })
}
