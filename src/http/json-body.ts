// Request bodies are parsed here rather than by JSON.parse, which rounds integers beyond 2^53:
// every JSON integer literal becomes a BigInt, so each int64 keeps all of its digits.
import { isInteger, parse } from 'lossless-json'
import { ApiError } from '../errors.js'

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/**
 * Integer literals become BigInts; those with a fraction or an exponent (`1.0`, `1e2`, `-0.0`)
 * numbers, which no integer field accepts.
 */
const parseNumber = (literal: string): bigint | number =>
  isInteger(literal) ? BigInt(literal) : Number(literal)

// With the u flag a well-formed surrogate pair is one code point; only a lone half matches.
const LONE_SURROGATE = /\p{Cs}/u

/** `"\ud800"` is valid JSON but not valid Unicode: storing it would change the text. */
function rejectLoneSurrogates(key: string, value: unknown): unknown {
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new ApiError('invalid_request', 'request body contains a lone UTF-16 surrogate escape')
  }
  return value
}

/** Deepest nesting of arrays and objects a body may have; a NewPet needs one level. */
const MAX_JSON_DEPTH = 32

/** Whether the text nests deeper than `max`, in one pass: lossless-json recurses. */
function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  // A string, closed or not, is one token: brackets in it are text.
  for (const [token] of text.matchAll(/"(?:[^"\\]|\\[\s\S])*"?|[[{\]}]/g)) {
    if (token === '[' || token === '{') {
      if (++depth > max) return true
    } else if (token === ']' || token === '}') depth--
  }
  return false
}

export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) throw new ApiError('invalid_request', 'request body is empty')
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new ApiError('invalid_request', 'request body is not valid UTF-8')
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError(
      'invalid_request',
      `request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`,
    )
  }
  try {
    return parse(text, rejectLoneSurrogates, parseNumber)
  } catch (err) {
    if (err instanceof ApiError) throw err
    const detail = err instanceof Error ? err.message : 'syntax error'
    throw new ApiError('invalid_request', `request body is not valid JSON: ${detail}`)
  }
}

/**
 * One `; name=value` of a media type (RFC 9110 §5.6.6), or an empty one (`;;`, which the grammar
 * allows): the name a token, the value a token or a quoted-string.
 */
const PARAMETER =
  /[\t ]*;[\t ]*(?:([!#$%&'*+.^_`|~0-9A-Za-z-]+)=([!#$%&'*+.^_`|~0-9A-Za-z-]+|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?/y

/**
 * Whether the parameters of an `application/json` Content-Type leave the body UTF-8 JSON: each
 * well formed, none named twice (which of two would count is ambiguous), none empty, and a
 * charset, if any, `utf-8`. The media type itself is matched by Fastify's parser lookup.
 */
export function isAcceptedJsonCharset(contentType: string): boolean {
  const names = new Set<string>()
  for (let at = contentType.indexOf(';'); at !== -1 && at < contentType.length; ) {
    PARAMETER.lastIndex = at
    const m = PARAMETER.exec(contentType)
    if (m === null) return /^[\t ]*$/.test(contentType.slice(at))
    at = PARAMETER.lastIndex
    if (m[1] === undefined) continue
    const name = m[1].toLowerCase()
    const value = m[2]!.startsWith('"') ? m[2]!.slice(1, -1).replace(/\\(.)/g, '$1') : m[2]!
    if (names.has(name) || value === '') return false
    names.add(name)
    if (name === 'charset' && !['utf-8', 'utf8'].includes(value.toLowerCase())) return false
  }
  return true
}
