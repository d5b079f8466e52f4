// The OpenAPI 3.1 document, generated from the route schemas by @fastify/swagger, and served in
// four forms: JSON and YAML, each as 3.1 and as a 3.0 rendition.
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { stringify } from 'lossless-json'
import type { Config } from '../config.js'
import { responseLinks } from '../pets/links.js'
import { componentSchemas } from '../pets/schemas.js'
import { toOpenApi30 } from './openapi-30.js'
import { toYaml } from './yaml.js'

export interface OpenApiOptions {
  productionUrl: string
  stagingUrl: string
  /** `info.contact`: fields left null are left out, and so is the object when all are. */
  contact: { name: string | null; url: string | null; email: string | null }
  /** `info.license`: left out without a name. */
  license: { name: string | null; url: string | null }
}

/** The document's settings, from the service's. */
export function openApiOptions(config: Config): OpenApiOptions {
  return {
    productionUrl: config.productionUrl,
    stagingUrl: config.stagingUrl,
    contact: {
      name: config.openapiContactName,
      url: config.openapiContactUrl,
      email: config.openapiContactEmail,
    },
    license: { name: config.openapiLicenseName, url: config.openapiLicenseUrl },
  }
}

/** Where each form of the document is served, and its media type. */
const documentForms = {
  '/v1/openapi.json': 'application/json; charset=utf-8',
  '/v1/openapi.yaml': 'application/yaml',
  '/v1/openapi-3.0.json': 'application/json; charset=utf-8',
  '/v1/openapi-3.0.yaml': 'application/yaml',
} as const

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
 * response header whose schema says `x-required` (src/pets/responses.ts) becomes `required`, and
 * its `x-example` the header's `example`.
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
  if (schema !== undefined && 'x-example' in schema) {
    const { 'x-example': example, ...rest } = out.schema as Record<string, Json>
    out.schema = rest
    out.example = example
  }
  return out
}

/** The object without its null fields; undefined when none is left. */
function present<T extends object>(fields: T): Partial<T> | undefined {
  const kept = Object.entries(fields).filter(([, v]) => v !== null)
  return kept.length > 0 ? (Object.fromEntries(kept) as Partial<T>) : undefined
}

/** `info` with the contact and licence the operator set. */
function info(opts: OpenApiOptions): Record<string, Json> {
  const contact = present(opts.contact)
  const license = opts.license.name === null ? undefined : present(opts.license)
  return {
    title: 'Pet Store',
    version: '1.0.0',
    description: 'The catalogue of animals of a pet store.',
    ...(contact && { contact }),
    ...(license && { license }),
  }
}

/** Adds each operation's response `links` (src/pets/links.ts). */
function withLinks(paths: Record<string, Json>): Record<string, Json> {
  for (const methods of Object.values(paths)) {
    for (const op of Object.values(methods as Record<string, Record<string, Json>>)) {
      const links = responseLinks[String(op.operationId)] ?? {}
      const responses = op.responses as Record<string, Record<string, Json>>
      for (const [status, link] of Object.entries(links)) responses[status]!.links = link
    }
  }
  return paths
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
      info: info(opts) as never,
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
        paths: withLinks(
          headerCase(
            hoistComponents(stripVersionPrefix(doc.paths as Record<string, Json>), titles),
          ) as Record<string, Json>,
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

  serveForms(app)
}

/** The routes of the document's forms, written once, on the first request for any of them. */
function serveForms(app: FastifyInstance): void {
  type Path = keyof typeof documentForms
  let texts: Record<Path, string> | undefined
  // By the first request every route is known, so the document is complete.
  const written = () => {
    const doc = app.swagger() as unknown as Record<string, Json>
    const doc30 = toOpenApi30(doc)
    // lossless-json and toYaml write the int64 bounds, which are BigInts, with every digit.
    return {
      '/v1/openapi.json': stringify(doc) as string,
      '/v1/openapi.yaml': toYaml(doc),
      '/v1/openapi-3.0.json': stringify(doc30) as string,
      '/v1/openapi-3.0.yaml': toYaml(doc30),
    }
  }
  for (const [path, type] of Object.entries(documentForms) as [Path, string][]) {
    app.get(
      path,
      { config: { public: true, operation: 'openapi' }, schema: { hide: true } },
      async (_request, reply) => {
        texts ??= written()
        reply.type(type)
        return texts[path]
      },
    )
  }
}
