// Schema validation without type coercion and with exact 64-bit integers: every `type: integer`
// node is compiled as the `x-integer` keyword below, which checks with BigInt the BigInts of JSON
// bodies and the plain decimal literals (no `+`, `0x`, `1e2`) of the query string and path.
import { Ajv, type ErrorObject, type SchemaObject } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const DECIMAL = /^-?(0|[1-9][0-9]*)$/

interface IntegerRule {
  min: string
  max: string
  asBigInt: boolean
}

function toIntegerRule(node: SchemaObject): IntegerRule {
  const int64 = node.format === 'int64'
  return {
    min: String(node.minimum ?? (int64 ? INT64_MIN : Number.MIN_SAFE_INTEGER)),
    max: String(node.maximum ?? (int64 ? INT64_MAX : Number.MAX_SAFE_INTEGER)),
    asBigInt: int64,
  }
}

/** A copy of the schema in which every `type: integer` node uses `x-integer` instead. */
export function rewriteIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteIntegers)
  if (schema === null || typeof schema !== 'object') return schema
  const node = schema as SchemaObject
  const out: SchemaObject = {}
  for (const [k, v] of Object.entries(node)) out[k] = rewriteIntegers(v)
  if (node.type === 'integer') {
    const { type: _t, format: _f, minimum: _min, maximum: _max, ...rest } = out
    return { ...rest, 'x-integer': toIntegerRule(node) }
  }
  return out
}

type Source = 'json' | 'text'

/** Each rule's bounds as BigInts, converted from decimal text at its first check only. */
const boundsOfRule = new WeakMap<IntegerRule, { min: bigint; max: bigint }>()

function boundsOf(rule: IntegerRule): { min: bigint; max: bigint } {
  let bounds = boundsOfRule.get(rule)
  if (bounds === undefined) {
    bounds = { min: BigInt(rule.min), max: BigInt(rule.max) }
    boundsOfRule.set(rule, bounds)
  }
  return bounds
}

function integerKeyword(source: Source) {
  function validate(
    this: unknown,
    rule: IntegerRule,
    data: unknown,
    _parentSchema?: unknown,
    ctx?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number },
  ): boolean {
    let value: bigint | null = null
    if (source === 'json' && typeof data === 'bigint') value = data
    if (source === 'text' && typeof data === 'string' && DECIMAL.test(data)) value = BigInt(data)
    // A default filled in from the schema arrives as a number.
    if (source === 'text' && typeof data === 'number' && Number.isSafeInteger(data)) {
      value = BigInt(data)
    }
    const { min, max } = boundsOf(rule)
    if (value === null || value < min || value > max) {
      const range = rule.asBigInt ? 'a 64-bit integer' : `an integer from ${min} to ${max}`
      validate.errors = [{ keyword: 'x-integer', message: `must be ${range}`, params: {} }]
      return false
    }
    if (ctx?.parentData !== undefined) {
      ctx.parentData[ctx.parentDataProperty] = rule.asBigInt ? value : Number(value)
    }
    return true
  }
  validate.errors = undefined as Partial<ErrorObject>[] | undefined
  return validate
}

function makeAjv(source: Source): Ajv {
  const ajv = new Ajv({
    coerceTypes: false,
    useDefaults: source === 'text',
    removeAdditional: false,
    allErrors: false,
    // Errors then carry their parent schema, so a message can give a field's whole allowed range.
    verbose: true,
    strict: false,
    // The schemas are built by TypeBox and the OpenAPI test validates the whole document; checking
    // each against the meta-schema again would only slow the start-up.
    validateSchema: false,
  })
  ajv.addKeyword({
    keyword: 'x-integer',
    modifying: true,
    errors: true,
    schemaType: 'object',
    validate: integerKeyword(source),
  })
  return ajv
}

/**
 * Fastify validator compiler: one Ajv for JSON bodies, one for text (query string, path). A schema
 * object is compiled once per part, so the fast lane and the routes share their validators.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const json = makeAjv('json')
  const text = makeAjv('text')
  const compiled = { json: new WeakMap<object, Validate>(), text: new WeakMap<object, Validate>() }
  return ({ schema: part, httpPart }) => {
    const schema = part as object
    const source: Source = httpPart === 'body' ? 'json' : 'text'
    const known = compiled[source].get(schema)
    if (known !== undefined) return known
    const validate = (source === 'json' ? json : text).compile(
      rewriteIntegers(schema) as SchemaObject,
    )
    compiled[source].set(schema, validate)
    return validate
  }
}

type Validate = ReturnType<Ajv['compile']>
