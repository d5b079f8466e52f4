// The `request completed` line as the JSON text pino writes for it, built without pino.
import { COMPLETED, type CompletedRequest, durationText, loggedUrl } from './request-line.js'

/** pino's number for `info`. */
export const INFO = 30

/** Printable ASCII but `"` and `\`: such a string is its own JSON text between quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON must escape exactly these.
const CONTROL = /[\x00-\x1f]/

/** From Node.js 25 on, pino's asString is JSON.stringify, which escapes lone surrogates. */
const PINO_STRINGIFIES = Number(process.versions.node.split('.')[0]) >= 25

/** A string as pino writes it (its asString): JSON.stringify only when long or with a control. */
function jsonString(s: string): string {
  if (PINO_STRINGIFIES) return JSON.stringify(s)
  if (PLAIN.test(s)) return `"${s}"`
  if (s.length > 100 || CONTROL.test(s)) return JSON.stringify(s)
  return `"${s.replace(/["\\]/g, '\\$&')}"`
}

/**
 * A field's JSON text, `,"name":"value"`, remembered for the value it was last built for:
 * consecutive lines mostly share their operation, method, key and client address.
 */
function lastField(name: string): (value: string) => string {
  let value: string | undefined
  let text = ''
  return (v) => {
    if (v !== value) {
      value = v
      text = `,"${name}":${jsonString(v)}`
    }
    return text
  }
}

/** Builds a line's text after its head (level, time and the logger's bindings). */
export type LineJson = (r: CompletedRequest, head: string) => string

/** A line builder with its own memory of the last fields (see lastField). */
export function lineJson(): LineJson {
  const operationField = lastField('operation')
  const methodField = lastField('method')
  const keyField = lastField('apiKeyName')
  const addressField = lastField('remoteAddress')
  // The fields in requestLine's order; pino leaves out the undefined ones.
  return (r, head) => {
    let s = head
    if (r.requestId !== undefined) s += `,"requestId":${jsonString(r.requestId)}`
    s += operationField(r.operation) + methodField(r.method)
    if (r.url !== undefined) s += `,"url":${jsonString(loggedUrl(r.url))}`
    s += `,"status":${r.status}`
    if (r.delivered === false) s += ',"delivered":false'
    s += `,"durationMs":${durationText(r.elapsedMs)}`
    if (r.apiKeyName !== undefined) s += keyField(r.apiKeyName)
    if (r.remoteAddress !== undefined) s += addressField(r.remoteAddress)
    return `${s},"msg":"${COMPLETED}"}\n`
  }
}
