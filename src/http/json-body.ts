// Request bodies are parsed here rather than by JSON.parse, which rounds integers beyond 2^53.
import { isInteger, parse } from 'lossless-json'
import { ApiError } from '../errors.js'
import { parseFlatJsonObject } from './flat-json.js'

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/**
 * JSON integer literals become BigInt, so every int64 keeps all of its digits; literals with a
 * fraction or exponent (`1.0`, `1e2`, `-0.0`) become numbers, which no integer field accepts.
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

export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) throw new ApiError('invalid_request', 'request body is empty')
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new ApiError('invalid_request', 'request body is not valid UTF-8')
  }
  // The usual body takes one pass (flat-json.ts); any other, lossless-json.
  const flat = parseFlatJsonObject(text)
  if (flat !== undefined) return flat
  try {
    return parse(text, rejectLoneSurrogates, parseNumber)
  } catch (err) {
    if (err instanceof ApiError) throw err
    const detail = err instanceof Error ? err.message : 'syntax error'
    throw new ApiError('invalid_request', `request body is not valid JSON: ${detail}`)
  }
}

/** Accepts `application/json`, optionally with `charset=utf-8`; another charset is refused. */
export function isAcceptedJsonCharset(contentType: string): boolean {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)
  return m === null || m[1]!.toLowerCase() === 'utf-8' || m[1]!.toLowerCase() === 'utf8'
}
