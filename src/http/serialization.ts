// Response serializers: fast-json-stringify, as Fastify would build them, but given each schema
// without its BigInt bounds. Those are for the validator (src/http/validation.ts) and the document,
// and fast-json-stringify's own schema check takes only numbers.
import fastJsonStringify, { type Schema } from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'

function withoutBigIntBounds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutBigIntBounds)
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) {
    if (typeof v !== 'bigint') out[k] = withoutBigIntBounds(v)
  }
  return out
}

export function compileSerializer<T>(schema: unknown): (value: T) => string {
  return fastJsonStringify(withoutBigIntBounds(schema) as Schema) as (value: T) => string
}

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) =>
  compileSerializer(schema)
