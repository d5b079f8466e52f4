// The usual request body, one flat JSON object such as {"name":"Rex","categoryId":7}, parsed in
// one pass, far cheaper than lossless-json. It answers only as lossless-json would: anything else
// gives undefined and is left to lossless-json (test/flat-json.test.ts checks they agree).

const SPACE = 0x20
const TAB = 0x09
const NEWLINE = 0x0a
const RETURN = 0x0d
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const ZERO = 0x30
const ONE = 0x31
const NINE = 0x39
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

const isDigit = (c: number) => c >= ZERO && c <= NINE

/** JSON's four whitespace characters, the same set as lossless-json's. */
function skipWhitespace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i)
    if (c !== SPACE && c !== NEWLINE && c !== TAB && c !== RETURN) return i
    i++
  }
}

/**
 * The index of the quote that closes a string starting at `from`, or -1 when the string has an
 * escape or a control character (left to the full parser: an escape may be a lone surrogate the
 * reviver refuses, a control character is a syntax error) or no end.
 */
function plainStringEnd(text: string, from: number): number {
  for (let j = from; j < text.length; j++) {
    const c = text.charCodeAt(j)
    if (c === QUOTE) return j
    if (c === BACKSLASH || c < SPACE) return -1
  }
  return -1
}

/**
 * The object as parseJsonBody's lossless-json call would give it (integers as BigInt, the keys
 * in order), when `text` is a flat object of unescaped strings, integer literals, true, false
 * and null, with distinct keys other than `__proto__`; undefined otherwise.
 */
export function parseFlatJsonObject(text: string): Record<string, unknown> | undefined {
  let i = skipWhitespace(text, 0)
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined
  const object: Record<string, unknown> = {}
  i = skipWhitespace(text, i + 1)
  if (text.charCodeAt(i) === CLOSE_BRACE) {
    return skipWhitespace(text, i + 1) === text.length ? object : undefined
  }
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return undefined
    const keyEnd = plainStringEnd(text, i + 1)
    if (keyEnd < 0) return undefined
    const key = text.slice(i + 1, keyEnd)
    // A repeated key is an error, or not, by lossless-json's rules; `__proto__` needs its care.
    if (key === '__proto__' || Object.hasOwn(object, key)) return undefined
    i = skipWhitespace(text, keyEnd + 1)
    if (text.charCodeAt(i) !== COLON) return undefined
    i = skipWhitespace(text, i + 1)
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const end = plainStringEnd(text, i + 1)
      if (end < 0) return undefined
      object[key] = text.slice(i + 1, end)
      i = end + 1
    } else if (c === MINUS || isDigit(c)) {
      let j = c === MINUS ? i + 1 : i
      const first = text.charCodeAt(j)
      if (first === ZERO) j++
      else if (first >= ONE && first <= NINE) {
        j++
        while (isDigit(text.charCodeAt(j))) j++
      } else return undefined
      // Only whitespace, a comma or the brace may follow (checked below): a fraction or an
      // exponent (a Number in parseJsonBody) and a digit after a leading zero (a syntax error)
      // are the full parser's to give.
      object[key] = BigInt(text.slice(i, j))
      i = j
    } else if (text.startsWith('true', i)) {
      object[key] = true
      i += 4
    } else if (text.startsWith('false', i)) {
      object[key] = false
      i += 5
    } else if (text.startsWith('null', i)) {
      object[key] = null
      i += 4
    } else {
      return undefined
    }
    i = skipWhitespace(text, i)
    const separator = text.charCodeAt(i)
    if (separator === CLOSE_BRACE) {
      return skipWhitespace(text, i + 1) === text.length ? object : undefined
    }
    if (separator !== COMMA) return undefined
    i = skipWhitespace(text, i + 1)
  }
}
