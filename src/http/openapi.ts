// The OpenAPI 3.1 document, generated from the route schemas by @fastify/swagger.
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { stringify } from 'lossless-json'
import { componentSchemas } from '../pets/schemas.js'

export interface OpenApiOptions {
  productionUrl: string
  stagingUrl: string
}

type Json = unknown

/** Replaces every schema titled like a component with a $ref to it, so each is defined once. */
function hoistComponents(node: Json, titles: Set<string>, isRoot = true): Json {
  if (Array.isArray(node)) return node.map((n) => hoistComponents(n, titles, false))
  if (node === null || typeof node !== 'object') return node
  const obj = node as Record<string, Json>
  if (!isRoot && typeof obj.title === 'string' && titles.has(obj.title)) {
    return { $ref: `#/components/schemas/${obj.title}` }
  }
  const out: Record<string, Json> = {}
  for (const [k, v] of Object.entries(obj)) out[k] = hoistComponents(v, titles, false)
  return out
}

/**
 * Fastify sees header names in lower case; the document shows them as clients write them. A
 * response header whose schema says `x-required` (src/pets/responses.ts) becomes `required`.
 */
function headerCase(node: Json): Json {
  if (Array.isArray(node)) return node.map(headerCase)
  if (node === null || typeof node !== 'object') return node
  const obj = node as Record<string, Json>
  const out: Record<string, Json> = {}
  for (const [k, v] of Object.entries(obj)) out[k] = headerCase(v)
  if (obj.in === 'header' && typeof obj.name === 'string') {
    out.name = obj.name.replace(
      /(^|-)([a-z])/g,
      (_m, dash: string, c: string) => dash + c.toUpperCase(),
    )
  }
  const schema = obj.schema as Record<string, Json> | undefined
  if (schema?.['x-required'] === true) {
    const { 'x-required': _required, ...rest } = out.schema as Record<string, Json>
    out.schema = rest
    out.required = true
  }
  return out
}

/** Paths are relative to the servers, which end in /v1. */
function stripVersionPrefix(paths: Record<string, Json> = {}): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(paths).map(([p, v]) => [p.replace(/^\/v1(?=\/)/, ''), v]),
  )
}

export async function registerOpenApi(app: FastifyInstance, opts: OpenApiOptions): Promise<void> {
  const titles = new Set(Object.keys(componentSchemas))
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pet Store',
        version: '1.0.0',
        description: 'The catalogue of animals of a pet store.',
      },
      servers: [
        { url: opts.productionUrl, description: 'Production' },
        { url: opts.stagingUrl, description: 'Staging' },
      ],
      tags: [
        { name: 'animals', description: 'The animals of the catalogue.' },
        {
          name: 'orders',
          description:
            'Store orders are referred to by the interface but not defined by it: `GET /store/orders` answers 501 `not_implemented`.',
        },
      ],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearerAuth: [] }],
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, Json> }).openapiObject
      const components = (doc.components ?? {}) as Record<string, Json>
      const schemas = Object.fromEntries(
        Object.entries(componentSchemas).map(([name, schema]) => [
          name,
          hoistComponents(structuredClone(schema), titles),
        ]),
      )
      return {
        ...doc,
        // Both servers are for the public: clients on the internet call them.
        servers: (doc.servers as Json[]).map((server) => ({
          ...(server as object),
          'x-internal': false,
        })),
        paths: headerCase(
          hoistComponents(stripVersionPrefix(doc.paths as Record<string, Json>), titles),
        ),
        components: { ...components, schemas },
        // Both groups the interface names, each operation in one of them (docs/api-behaviour.md).
        'x-tagGroups': [
          { name: 'Store', tags: ['orders'] },
          { name: 'Pets', tags: ['animals'] },
        ],
      } as never
    },
  })

  let document: string | undefined
  app.get(
    '/v1/openapi.json',
    { config: { public: true, operation: 'openapi' }, schema: { hide: true } },
    async (_request, reply) => {
      // lossless-json writes the int64 bounds, which are BigInts, with every digit.
      document ??= stringify(app.swagger()) as string
      reply.type('application/json; charset=utf-8')
      return document
    },
  )
}
