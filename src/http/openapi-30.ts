// The OpenAPI 3.0 rendition of the 3.1 document, for tools that read only 3.0 (Dredd,
// openapi-diff, gateways' importers). What changes is listed in docs/api-behaviour.md.

type Json = unknown
type Obj = Record<string, Json>

export const OPENAPI_30_VERSION = '3.0.3'

const isObj = (v: Json): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)

/** Keys of a schema whose value is data (an example, a default, an enum's values), not a schema. */
const SCHEMA_DATA = new Set(['example', 'examples', 'default', 'enum', 'const'])
const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames'])
const SUBSCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems'])
const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs'])

const mapValues = (o: Obj, f: (v: Json) => Json): Obj =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]))

/** One JSON Schema 2020-12 object, and those inside it, as the OpenAPI 3.0 Schema Object says it. */
function schema30(node: Json): Json {
  if (!isObj(node)) return node
  const out: Obj = {}
  for (const [key, value] of Object.entries(node)) {
    if (SCHEMA_DATA.has(key)) out[key] = value
    else if (SUBSCHEMA.has(key)) out[key] = schema30(value)
    else if (SUBSCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map(schema30)
    else if (SUBSCHEMA_MAPS.has(key) && isObj(value)) out[key] = mapValues(value, schema30)
    else out[key] = value
  }
  return downgradeKeywords(node, out)
}

/** The keywords 3.0 lacks, said its way: `const`, `examples`, type arrays, numeric exclusive bounds. */
function downgradeKeywords(node: Obj, out: Obj): Obj {
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
  for (const [bound, plain] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof node[bound] === 'number' || typeof node[bound] === 'bigint') {
      out[plain] = node[bound]
      out[bound] = true
    }
  }
  return out
}

/** The document outside schemas: each `schema`, and each of `components.schemas`, converted. */
function walk(node: Json, key = ''): Json {
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
  const info = { ...(doc.info as Obj) }
  delete info.summary
  if (isObj(info.license)) {
    const { identifier: _identifier, ...license } = info.license
    info.license = license
  }
  return { openapi: OPENAPI_30_VERSION, ...(walk({ ...rest, info }) as Obj) }
}
