// GET /: where someone who opens the service's address finds the reference page and the OpenAPI
// document, rather than a bare 404. Public, outside /v1, not part of the API it describes.
import type { FastifyInstance } from 'fastify'

export async function indexRoute(
  app: FastifyInstance,
  opts: { docsUrl: string; specUrl: string },
): Promise<void> {
  // RFC 8631's relations, so that tools can follow them as well as people.
  const link = `<${opts.docsUrl}>; rel="service-doc", <${opts.specUrl}>; rel="service-desc"`
  const config = { public: true, operation: 'index' }
  app.get('/', { config, schema: { hide: true } }, async (_request, reply) => {
    reply.header('link', link)
    return { docs: opts.docsUrl, openapi: opts.specUrl }
  })
}
