// The OpenAPI 3.1 document, generated from the route schemas by @fastify/swagger, and served in
// four forms: JSON and YAML, each as 3.1 and as a 3.0 rendition.
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { stringify } from 'lossless-json'
import type { Config } from '../config.js'
import { componentSchemas } from '../pets/schemas.js'
import { toOpenApi30 } from './openapi-30.js'
import { toYaml } from './yaml.js'

type Obj = Record<string, unknown>

/** The fields that are set, or undefined when none is. */
function present(fields: Obj): Obj | undefined {
  const kept = Object.entries(fields).filter(([, v]) => v !== null)
  return kept.length > 0 ? Object.fromEntries(kept) : undefined
}

/**
 * A copy of the document's part in which every schema titled like a component (but the component
 * itself) is a $ref to it, and header parameters are named as clients write them (Fastify lowers
 * them). A response header's `x-required` and `x-example` (src/pets/responses.ts) become its own.
 */
function finish(node: unknown, root = false): unknown {
  if (Array.isArray(node)) return node.map((n) => finish(n))
  if (node === null || typeof node !== 'object') return node
  const obj = node as Obj
  if (!root && typeof obj.title === 'string' && Object.hasOwn(componentSchemas, obj.title)) {
    return { $ref: `#/components/schemas/${obj.title}` }
  }
  const out: Obj = {}
  for (const [k, v] of Object.entries(obj)) out[k] = finish(v)
  if (obj.in === 'header' && typeof obj.name === 'string') {
    out.name = obj.name.replace(/(^|-)[a-z]/g, (m) => m.toUpperCase())
  }
  const { 'x-required': required, 'x-example': example, ...schema } = (out.schema ?? {}) as Obj
  if (required !== undefined || example !== undefined) {
    out.schema = schema
    if (required !== undefined) out.required = required
    if (example !== undefined) out.example = example
  }
  return out
}

/** The document's head: title, contact, licence and servers from the settings, tags, security. */
function documentHead(opts: Config): Obj {
  const contact = present({
    name: opts.openapiContactName,
    url: opts.openapiContactUrl,
    email: opts.openapiContactEmail,
  })
  const license =
    opts.openapiLicenseName !== null
      ? present({ name: opts.openapiLicenseName, url: opts.openapiLicenseUrl })
      : undefined
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pet Store',
      version: '1.0.0',
      description: 'The catalogue of animals of a pet store.',
      ...(contact && { contact }),
      ...(license && { license }),
    },
    // Both servers are for the public: clients on the internet call them.
    servers: [
      { url: opts.productionUrl, description: 'Production', 'x-internal': false },
      { url: opts.stagingUrl, description: 'Staging', 'x-internal': false },
    ],
    tags: [
      { name: 'animals', description: 'The animals of the catalogue.' },
      {
        name: 'orders',
        description:
          'Store orders are referred to by the interface but not defined by it: `GET /store/orders` answers 501 `not_implemented`.',
      },
    ],
    components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearerAuth: [] }],
    // Both groups the interface names, each operation in one of them (docs/api-behaviour.md).
    'x-tagGroups': [
      { name: 'Store', tags: ['orders'] },
      { name: 'Pets', tags: ['animals'] },
    ],
  }
}

export async function registerOpenApi(app: FastifyInstance, opts: Config): Promise<void> {
  // @fastify/swagger writes a route's `links` option into its responses; ours are in its schema.
  app.addHook('onRoute', (route) => {
    Object.assign(route, { links: (route.schema as { links?: Obj } | undefined)?.links })
  })
  await app.register(swagger, {
    openapi: documentHead(opts) as never,
    // Paths are relative to the servers, which end in /v1.
    transform: ({ schema, url }) => ({ schema, url: url.replace(/^\/v1(?=\/)/, '') }),
    transformObject: (document) => {
      const doc = (document as { openapiObject: Obj & { components: Obj } }).openapiObject
      const schemas = Object.entries(componentSchemas).map(([k, v]) => [k, finish(v, true)])
      doc.components.schemas = Object.fromEntries(schemas)
      return { ...doc, paths: finish(doc.paths) } as never
    },
  })

  // Written once, on the first request for any form: by then every route is known.
  let texts: Record<string, string> | undefined
  const written = () => {
    const doc = app.swagger() as unknown as Obj
    const doc30 = toOpenApi30(doc)
    // lossless-json and toYaml write the int64 bounds, which are BigInts, with every digit.
    return {
      'openapi.json': stringify(doc) as string,
      'openapi.yaml': toYaml(doc),
      'openapi-3.0.json': stringify(doc30) as string,
      'openapi-3.0.yaml': toYaml(doc30),
    }
  }
  for (const form of ['openapi.json', 'openapi.yaml', 'openapi-3.0.json', 'openapi-3.0.yaml']) {
    const config = { public: true, operation: 'openapi' }
    const type = form.endsWith('.json') ? 'application/json; charset=utf-8' : 'application/yaml'
    app.get(`/v1/${form}`, { config, schema: { hide: true } }, async (_request, reply) => {
      texts ??= written()
      reply.type(type)
      return texts[form]
    })
  }
}
