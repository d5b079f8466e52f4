// The scripts of the /docs page, served by the service: cacheable, revalidated by ETag, gzipped
// when the client accepts it.
import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import type { FastifyInstance, FastifyRequest } from 'fastify'

interface Asset {
  body: Buffer
  gzipped: Buffer
  etag: string
}

/** True when Accept-Encoding allows gzip (by name or `*`) with a non-zero quality. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false
  return header.split(',').some((part) => {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    if (coding !== 'gzip' && coding !== '*') return false
    const q = params.find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

function matchesEtag(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match']
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim()
    return tag === '*' || tag === etag || tag === `W/${etag}`
  })
}

/**
 * Serves the script `load` gives at `url` with `cacheControl`. It is read and compressed once, on
 * first use, so building an app stays cheap; a failed read is tried again on the next request.
 */
export function serveScript(
  app: FastifyInstance,
  url: string,
  cacheControl: string,
  load: () => Promise<string>,
): void {
  let asset: Promise<Asset> | undefined
  const prepare = async (): Promise<Asset> => {
    const body = Buffer.from(await load())
    const gzipped = await promisify(gzip)(body)
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    return { body, gzipped, etag }
  }

  app.get(
    url,
    { config: { public: true, operation: 'docsAsset' }, schema: { hide: true } },
    async (request, reply) => {
      asset ??= prepare().catch((err: unknown) => {
        asset = undefined
        throw err
      })
      const { body, gzipped, etag } = await asset
      reply
        .header('cache-control', cacheControl)
        .header('etag', etag)
        .header('vary', 'accept-encoding')
        .header('x-content-type-options', 'nosniff')
      if (matchesEtag(request, etag)) return reply.code(304).send()
      reply.type('text/javascript; charset=utf-8')
      if (!acceptsGzip(request.headers['accept-encoding'])) return body
      reply.header('content-encoding', 'gzip')
      return gzipped
    },
  )
}
