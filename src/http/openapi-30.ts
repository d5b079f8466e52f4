// The OpenAPI 3.0 rendition of the 3.1 document, for tools that read only 3.0 (Dredd,
// openapi-diff, gateways' importers). What changes is listed in docs/api-behaviour.md.

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const mapValues = (o: Obj, f: (v: unknown) => unknown): Obj =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]))

const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames'])
const SUBSCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems'])
const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs'])

/** One JSON Schema 2020-12 object, and those inside it, as the OpenAPI 3.0 Schema Object says it:
 * `const`, `examples`, type arrays and numeric exclusive bounds the 3.0 way. */
function schema30(node: unknown): unknown {
  if (!isObj(node)) return node
  const out: Obj = {}
  for (const [k, v] of Object.entries(node)) {
    if (SUBSCHEMA.has(k)) out[k] = schema30(v)
    else if (SUBSCHEMA_LISTS.has(k) && Array.isArray(v)) out[k] = v.map(schema30)
    else if (SUBSCHEMA_MAPS.has(k) && isObj(v)) out[k] = mapValues(v, schema30)
    else out[k] = v
  }
  if ('const' in node) {
    delete out.const
    out.enum = [node.const]
  }
  if (Array.isArray(node.examples)) {
    delete out.examples
    if (node.examples.length > 0 && !('example' in node)) out.example = node.examples[0]
  }
  if (Array.isArray(node.type)) {
    const types = node.type.filter((t) => t !== 'null')
    if (types.length !== 1) throw new Error(`no OpenAPI 3.0 form for type ${String(node.type)}`)
    out.type = types[0]
    if (types.length < node.type.length) out.nullable = true
  }
  for (const bound of ['Minimum', 'Maximum']) {
    const value = node[`exclusive${bound}`]
    if (typeof value === 'number' || typeof value === 'bigint') {
      out[bound.toLowerCase()] = value
      out[`exclusive${bound}`] = true
    }
  }
  return out
}

/** The document outside schemas: each `schema`, and each of `components.schemas`, converted. */
function walk(node: unknown, key = ''): unknown {
  if (Array.isArray(node)) return node.map((n) => walk(n))
  if (!isObj(node)) return node
  if (key === 'schema') return schema30(node)
  const out: Obj = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === 'example' || k === 'examples' || k === 'links') out[k] = v
    else if (key === 'components' && k === 'schemas' && isObj(v)) out[k] = mapValues(v, schema30)
    else out[k] = walk(v, k)
  }
  return out
}

/** The 3.1 document (as @fastify/swagger gives it, int64 bounds as BigInts) written as 3.0. */
export function toOpenApi30(doc: Obj): Obj {
  const { openapi: _version, webhooks: _webhooks, jsonSchemaDialect: _dialect, ...rest } = doc
  const { summary: _summary, ...info } = doc.info as Obj
  if (isObj(info.license)) {
    const { identifier: _identifier, ...license } = info.license
    info.license = license
  }
  return { openapi: '3.0.3', ...(walk({ ...rest, info }) as Obj) }
}
