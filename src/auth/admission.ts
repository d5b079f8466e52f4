// Who may call the API and how often: the key check, the per-key budget and the
// failed-authentication budget per client network.
import { createHash } from 'node:crypto'
import { ApiError } from '../errors.js'
import { clientNetwork } from '../http/forwarded.js'
import type { Deadline } from '../storage/deadline.js'
import type { ApiKeyVerifier, AuthenticatedKey } from './api-keys.js'
import type { Limit, RateCounters } from './rate-counters.js'

type Policy = 'default' | 'auth-failures'

export interface AdmissionOptions {
  verifier: ApiKeyVerifier
  rateLimit: Limit
  authFailureLimit: Limit
  counters: RateCounters
  /** Hears of each request refused with 429, by policy (for metrics). */
  onRateLimited?: (policy: Policy) => void
}

/** What admission decided of a request. */
export interface Admission {
  /** The key that authenticated it; null when none did. */
  key: AuthenticatedKey | null
  /** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), as a flat list. */
  headers: string[]
  /** The 401 or 429 to answer instead of the operation, with its own headers; null when admitted. */
  refusal: ApiError | null
}

/** Printable ASCII without spaces: what a token may be. */
const TOKEN = /^[\x21-\x7e]+$/

/** The bearer token, '' for a Bearer header without a usable token, null for no Bearer header. */
function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null
  // The usual `Bearer <token>`, read without a regex match and its substrings.
  if (header.startsWith('Bearer ')) {
    const token = header.slice(7)
    if (TOKEN.test(token)) return token
  }
  const m = /^Bearer(?: +(.*))?$/i.exec(header.trim())
  if (!m) return null
  const token = (m[1] ?? '').trim()
  return TOKEN.test(token) ? token : ''
}

/**
 * A counter's name: its policy and what it counts, a key id or a client network. An address from
 * X-Forwarded-For may be any text a client sends, so a subject past 64 characters is named by its
 * digest, in memory and Redis.
 */
export function counterName(policy: Policy, subject: string): string {
  return subject.length <= 64
    ? `${policy}:${subject}`
    : `${policy}:sha256:${createHash('sha256').update(subject).digest('base64url')}`
}

/** `RateLimit-Policy`, e.g. `"default";q=6000;w=60`. */
const policyField = (policy: Policy, limit: Limit) =>
  `"${policy}";q=${limit.max};w=${Math.ceil(limit.windowMs / 1000)}`

export class Admissions {
  private readonly policyFields: Record<Policy, string>

  constructor(private readonly o: AdmissionOptions) {
    this.policyFields = {
      default: policyField('default', o.rateLimit),
      'auth-failures': policyField('auth-failures', o.authFailureLimit),
    }
  }

  /**
   * Admits or refuses a request and counts it: against its key, or when no key authenticated it
   * (none sent, or one that failed) against its client's network. `keysVersion`: the keys part of
   * the data version; `deadline`: the request's, for a key looked up in the store.
   */
  async admit(
    authorization: string | undefined,
    address: string,
    keysVersion: number | undefined,
    deadline: Deadline,
  ): Promise<Admission> {
    const token = bearerToken(authorization)
    const key = token ? await this.o.verifier.verify(token, keysVersion, deadline) : null
    const policy: Policy = key ? 'default' : 'auth-failures'
    const s = key
      ? await this.o.counters.perKey.take(counterName(policy, key.id))
      : await this.o.counters.perAddress.take(counterName(policy, clientNetwork(address)))
    const headers = [
      'ratelimit-policy',
      this.policyFields[policy],
      'ratelimit',
      `"${policy}";r=${s.remaining};t=${Math.max(0, s.ttlInSeconds)}`,
    ]
    if (!s.isExceeded) return { key, headers, refusal: key ? null : unauthorized(token) }
    this.o.onRateLimited?.(policy)
    const message = key
      ? 'rate limit of this API key exceeded'
      : 'too many failed authentication attempts from this address'
    const retryAfter = String(Math.max(1, s.ttlInSeconds))
    return {
      key,
      headers,
      refusal: new ApiError('rate_limited', message, { 'retry-after': retryAfter }),
    }
  }
}

function unauthorized(token: string | null): ApiError {
  return token === null
    ? new ApiError('unauthorized', 'an API key is required: send Authorization: Bearer <key>', {
        'www-authenticate': 'Bearer realm="petstore"',
      })
    : new ApiError('unauthorized', 'the API key is not valid (unknown, revoked or expired)', {
        'www-authenticate': 'Bearer realm="petstore", error="invalid_token"',
      })
}
