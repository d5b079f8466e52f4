// Who may call the API and how often, decided once for the routes and the fast lane: the key
// check, the per-key budget and the failed-authentication budget per client network.
import { createHash } from 'node:crypto'
import { ApiError } from '../errors.js'
import { clientNetwork } from '../http/address-ranges.js'
import type { Deadline } from '../storage/deadline.js'
import type { ApiKeyVerifier, AuthenticatedKey } from './api-keys.js'
import type { Limit, LimitState, RateCounters } from './rate-counters.js'

export interface AdmissionOptions {
  verifier: ApiKeyVerifier
  rateLimit: Limit
  authFailureLimit: Limit
  counters: RateCounters
  /** Hears of each request refused with 429, by policy (for metrics). */
  onRateLimited?: (policy: Policy) => void
}

type Policy = 'default' | 'auth-failures'

/** What admission decided of a request. */
export interface Admission {
  /** The key that authenticated it; null when none did. */
  key: AuthenticatedKey | null
  /** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), as a flat list. */
  headers: string[]
  /** The 401 or 429 to answer instead of the operation, with its own headers; null when admitted. */
  refusal: ApiError | null
}

const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="petstore", error="invalid_token"'

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

/** Longest subject kept as it is in a counter's name; a longer one is named by its digest. */
const MAX_SUBJECT_LENGTH = 64

/**
 * A counter's name: its policy and what it counts, a key id or a client network. An address from
 * X-Forwarded-For may be any text a client sends, so its length is bounded, in memory and Redis.
 */
export function counterName(policy: Policy, subject: string): string {
  return subject.length <= MAX_SUBJECT_LENGTH
    ? `${policy}:${subject}`
    : `${policy}:sha256:${createHash('sha256').update(subject).digest('base64url')}`
}

/** Counter names remembered at most, as many as the verifier remembers keys. */
const MAX_COUNTER_NAMES = 10_000

export class Admissions {
  private readonly policies: Record<Policy, string>
  /** Each key's counter name, made once: a name built per request is hashed again per lookup. */
  private readonly keyCounterNames = new Map<string, string>()

  constructor(private readonly o: AdmissionOptions) {
    this.policies = {
      default: policyField('default', o.rateLimit),
      'auth-failures': policyField('auth-failures', o.authFailureLimit),
    }
  }

  /**
   * Admits or refuses a request and counts it. `keysVersion`: the keys part of the data version;
   * `deadline`: the request's, for a key looked up in the store.
   */
  async admit(
    authorization: string | undefined,
    address: string,
    keysVersion: number | undefined,
    deadline: Deadline,
  ): Promise<Admission> {
    const token = bearerToken(authorization)
    const key = token ? await this.o.verifier.verify(token, keysVersion, deadline) : null
    if (key === null) return this.refuse(token, address)
    return this.counted(key, await this.o.counters.perKey(this.keyCounterName(key.id)))
  }

  /** Whether the key matched before, counting nothing: a fast-lane create reads its body only then. */
  recognises(authorization: string | undefined): boolean {
    const token = bearerToken(authorization)
    return token ? this.o.verifier.knows(token) : false
  }

  private counted(key: AuthenticatedKey, s: LimitState): Admission {
    const refusal = s.isExceeded
      ? this.rateLimited('default', s, 'rate limit of this API key exceeded')
      : null
    return { key, headers: this.fields('default', s), refusal }
  }

  /** A missing (null) or failed token: counted against the address's network, then 401 or 429. */
  private async refuse(token: string | null, address: string): Promise<Admission> {
    const name = counterName('auth-failures', clientNetwork(address))
    const s = await this.o.counters.perAddress(name)
    return {
      key: null,
      headers: this.fields('auth-failures', s),
      refusal: s.isExceeded
        ? this.rateLimited(
            'auth-failures',
            s,
            'too many failed authentication attempts from this address',
          )
        : unauthorized(token),
    }
  }

  private fields(policy: Policy, s: LimitState): string[] {
    return [
      'ratelimit-policy',
      this.policies[policy],
      'ratelimit',
      `"${policy}";r=${s.remaining};t=${Math.max(0, s.ttlInSeconds)}`,
    ]
  }

  private rateLimited(policy: Policy, s: LimitState, message: string): ApiError {
    this.o.onRateLimited?.(policy)
    return new ApiError('rate_limited', message, {
      'retry-after': String(Math.max(1, s.ttlInSeconds)),
    })
  }

  private keyCounterName(keyId: string): string {
    let name = this.keyCounterNames.get(keyId)
    if (name === undefined) {
      if (this.keyCounterNames.size >= MAX_COUNTER_NAMES) this.keyCounterNames.clear()
      name = counterName('default', keyId)
      this.keyCounterNames.set(keyId, name)
    }
    return name
  }
}

/** `RateLimit-Policy`, e.g. `"default";q=6000;w=60`. */
function policyField(policy: Policy, limit: Limit): string {
  return `"${policy}";q=${limit.max};w=${Math.ceil(limit.windowMs / 1000)}`
}

function unauthorized(token: string | null): ApiError {
  return token === null
    ? new ApiError('unauthorized', 'an API key is required: send Authorization: Bearer <key>', {
        'www-authenticate': CHALLENGE,
      })
    : new ApiError('unauthorized', 'the API key is not valid (unknown, revoked or expired)', {
        'www-authenticate': INVALID_TOKEN_CHALLENGE,
      })
}
