// Schema validation without type coercion and with exact 64-bit integers: every `type: integer`
// node is compiled as the `x-integer` keyword below, which checks with BigInt the BigInts of JSON
// bodies and the plain decimal literals (no `+`, `0x`, `1e2`) of the query string and path.
import { Ajv, type ErrorObject, type SchemaObject } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

const DECIMAL = /^-?(0|[1-9][0-9]*)$/

type DataCxt = { parentData: Record<string | number, unknown>; parentDataProperty: string | number }

interface IntegerRule {
  min: bigint
  max: bigint
  int64: boolean
}

/** A copy of the schema in which every `type: integer` node uses `x-integer` instead. */
function rewriteIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteIntegers)
  if (schema === null || typeof schema !== 'object') return schema
  const out: SchemaObject = {}
  for (const [k, v] of Object.entries(schema)) out[k] = rewriteIntegers(v)
  if (out.type !== 'integer') return out
  const { type: _t, format, minimum, maximum, ...rest } = out
  const int64 = format === 'int64'
  const rule: IntegerRule = {
    min: BigInt(minimum ?? (int64 ? -(2n ** 63n) : Number.MIN_SAFE_INTEGER)),
    max: BigInt(maximum ?? (int64 ? 2n ** 63n - 1n : Number.MAX_SAFE_INTEGER)),
    int64,
  }
  return { ...rest, 'x-integer': rule }
}

/** The keyword for JSON bodies, whose integers are BigInts, or for text (query string, path). */
function integerKeyword(text: boolean) {
  const validate = (rule: IntegerRule, data: unknown, _: unknown, ctx?: DataCxt) => {
    let value: bigint | null = null
    if (!text && typeof data === 'bigint') value = data
    if (text && typeof data === 'string' && DECIMAL.test(data)) value = BigInt(data)
    // A default filled in from the schema arrives as a number.
    if (text && typeof data === 'number' && Number.isSafeInteger(data)) value = BigInt(data)
    if (value === null || value < rule.min || value > rule.max) {
      const range = rule.int64 ? 'a 64-bit integer' : `an integer from ${rule.min} to ${rule.max}`
      validate.errors = [{ keyword: 'x-integer', message: `must be ${range}`, params: {} }]
      return false
    }
    if (ctx?.parentData !== undefined) {
      ctx.parentData[ctx.parentDataProperty] = rule.int64 ? value : Number(value)
    }
    return true
  }
  validate.errors = undefined as Partial<ErrorObject>[] | undefined
  return validate
}

function makeAjv(text: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes: false,
    useDefaults: text,
    // Errors then carry their parent schema, so a message can give a field's whole allowed range.
    verbose: true,
    strict: false,
    // The schemas are built by TypeBox and the OpenAPI test validates the whole document; checking
    // each against the meta-schema again would only slow the start-up.
    validateSchema: false,
  })
  return ajv.addKeyword({
    keyword: 'x-integer',
    modifying: true,
    errors: true,
    schemaType: 'object',
    validate: integerKeyword(text),
  })
}

/** Fastify validator compiler: one Ajv for JSON bodies, one for text (query string, path). */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const json = makeAjv(false)
  const text = makeAjv(true)
  // A HEAD route has its GET's schemas: Ajv, which caches by schema object, compiles them once.
  const rewritten = new WeakMap<object, SchemaObject>()
  return ({ schema, httpPart }) => {
    const key = schema as object
    if (!rewritten.has(key)) rewritten.set(key, rewriteIntegers(key) as SchemaObject)
    return (httpPart === 'body' ? json : text).compile(rewritten.get(key)!)
  }
}
