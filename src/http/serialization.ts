// Response serializers: fast-json-stringify, as Fastify would build them, but given each schema
// without its BigInt bounds. Those are for the validator (src/http/validation.ts) and the document,
// and fast-json-stringify's own schema check takes only numbers.
import fastJsonStringify, { type Schema } from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'

export const compileSerializer = <T>(schema: unknown): ((value: T) => string) =>
  fastJsonStringify(
    JSON.parse(
      JSON.stringify(schema, (_k, v) => (typeof v === 'bigint' ? undefined : v)),
    ) as Schema,
  ) as (value: T) => string

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) =>
  compileSerializer(schema)
