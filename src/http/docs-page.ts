// The reference page at /docs: Redoc renders the served OpenAPI document. Its script comes from
// the redoc npm package and is served by the service itself, so the page works offline.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import type { FastifyInstance, FastifyRequest } from 'fastify'

export interface DocsPageOptions {
  /** Where the page fetches the OpenAPI document from. */
  specUrl?: string
}

const BUNDLE_URL = '/docs/redoc.standalone.js'
/** `npm run build` copies the bundle into dist/, beside the service's: the image ships it alone. */
const BUILT_BUNDLE = new URL('redoc.standalone.js', import.meta.url)
const PACKAGE_BUNDLE = 'redoc/bundles/redoc.standalone.js'
/** The sidebar footer of Redoc loads this logo from Redocly's CDN, the page's only outside call. */
const CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg'
const BLANK_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"

/**
 * Redoc injects its styles at run time ('unsafe-inline' styles) and runs its search index in a
 * worker made from a blob: URL; everything else comes from this origin or nowhere.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

// Redoc's default fonts (Roboto, Montserrat) are not served here: system fonts instead.
const SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
const MONO = 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace'
const THEME = {
  typography: { fontFamily: SANS, headings: { fontFamily: SANS }, code: { fontFamily: MONO } },
}

const escapeAttribute = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Redoc reads its options from the <redoc> element, so the page needs no inline script. */
function page(specUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0 }</style>
</head>
<body>
<redoc spec-url="${escapeAttribute(specUrl)}" theme="${escapeAttribute(JSON.stringify(THEME))}" expand-responses="200,201"></redoc>
<script src="${BUNDLE_URL}"></script>
</body>
</html>
`
}

interface Bundle {
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

/** The built copy, or in a checkout run from src/ the redoc package's own file. */
async function readBundle(): Promise<string> {
  try {
    return await readFile(BUILT_BUNDLE, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    return readFile(createRequire(import.meta.url).resolve(PACKAGE_BUNDLE), 'utf8')
  }
}

export async function docsPage(app: FastifyInstance, opts: DocsPageOptions): Promise<void> {
  const html = page(opts.specUrl ?? '/v1/openapi.json')
  // Read and compressed once, on first use, so building an app stays cheap.
  let bundle: Promise<Bundle> | undefined
  const loadBundle = async (): Promise<Bundle> => {
    // Served with the logo left blank, so that opening the page calls no third party; the page
    // test fails if an upgrade of Redoc brings another outside call.
    const body = Buffer.from((await readBundle()).replace(CDN_LOGO, BLANK_IMAGE))
    const gzipped = await promisify(gzip)(body)
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    return { body, gzipped, etag }
  }

  app.get(
    '/docs',
    { config: { public: true, operation: 'docs' }, schema: { hide: true } },
    async (_request, reply) => {
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', DOCS_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
      return html
    },
  )

  app.get(
    BUNDLE_URL,
    { config: { public: true, operation: 'docsAsset' }, schema: { hide: true } },
    async (request, reply) => {
      bundle ??= loadBundle().catch((err: unknown) => {
        bundle = undefined
        throw err
      })
      const { body, gzipped, etag } = await bundle
      reply
        .header('cache-control', 'public, max-age=86400')
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
