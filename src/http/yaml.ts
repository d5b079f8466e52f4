// JSON values written as YAML 1.2 in block style, for the document's YAML form. Integers are
// written with every digit, BigInts included; a YAML library would round the int64 bounds.

type Json = unknown

/** Words YAML 1.1 readers take for booleans or null: such strings are quoted. */
const RESERVED = /^(?:true|false|null|yes|no|on|off|y|n|~)$/i
/** Strings written plain: no indicator, no space, nothing a reader would take for a number. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./-]*$/
/**
 * Characters a double-quoted YAML scalar must escape beyond JSON's: C1 controls and DEL (not
 * printable in YAML), and NEL, LS, PS and BOM (line breaks or marks to YAML 1.1 readers).
 */
const NOT_PRINTABLE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g

function quoted(text: string): string {
  return JSON.stringify(text).replace(
    NOT_PRINTABLE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}

function scalarString(text: string): string {
  return PLAIN.test(text) && !RESERVED.test(text) ? text : quoted(text)
}

const isBlock = (value: Json): value is object =>
  value !== null &&
  typeof value === 'object' &&
  (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0)

function scalar(value: Json): string {
  if (typeof value === 'string') return scalarString(value)
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`no JSON form for ${value}`)
    return String(value)
  }
  if (typeof value === 'boolean' || value === null) return String(value)
  if (Array.isArray(value)) return '[]'
  if (typeof value === 'object') return '{}'
  throw new Error(`no JSON form for a ${typeof value}`)
}

/** The lines of a non-empty object or array, each starting with `indent`. */
function block(value: object, indent: string): string[] {
  const inner = `${indent}  `
  if (Array.isArray(value)) {
    return value.flatMap((item: Json) => {
      if (!isBlock(item)) return [`${indent}- ${scalar(item)}`]
      const [first, ...rest] = block(item, inner)
      return [`${indent}- ${first!.slice(inner.length)}`, ...rest]
    })
  }
  return Object.entries(value).flatMap(([key, item]: [string, Json]) => {
    if (item === undefined) return []
    const head = `${indent}${scalarString(key)}:`
    return isBlock(item) ? [head, ...block(item, inner)] : [`${head} ${scalar(item)}`]
  })
}

/** `value` as a YAML document; numeric keys such as response statuses stay strings. */
export function toYaml(value: Json): string {
  return `${(isBlock(value) ? block(value, '') : [scalar(value)]).join('\n')}\n`
}
