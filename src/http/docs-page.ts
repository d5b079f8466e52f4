// The reference page at /docs: Redoc renders the served OpenAPI document and a "Try it" panel
// sends its operations. Every script comes from the service itself (Redoc's from the redoc npm
// package), so the page works offline; each is cacheable, revalidated by ETag, gzipped on request.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import type { FastifyInstance } from 'fastify'

const BUNDLE_URL = '/docs/redoc.standalone.js'
const SCRIPT_URL = '/docs/page.js'

// Redoc injects its styles at run time and runs its search index in a worker from a blob: URL;
// everything else, the panel's requests included, comes from this origin or nowhere.
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self'; connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; " +
  "frame-ancestors 'none'"

// Redoc's default fonts (Roboto, Montserrat) are not served here: system fonts instead.
const SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
const MONO = 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace'
const THEME = {
  typography: { fontFamily: SANS, headings: { fontFamily: SANS }, code: { fontFamily: MONO } },
}

const escapeAttribute = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Redoc reads its options from the <redoc> element; the page's script (no inline one) hands it the
 * document it read (not `spec-url`: Redoc rounds with JSON.parse) and fills the "Try it" panel. */
const page = (specUrl: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store API reference</title>
<link rel="icon" href="data:,">
<style>
body { margin: 0 }
#try-it { position: fixed; right: 1rem; bottom: 1rem; z-index: 10; max-width: min(34rem, 90vw);
  max-height: 85vh; overflow: auto; background: #fff; color: #222; border: 1px solid #999;
  border-radius: 4px; box-shadow: 0 2px 12px rgba(0, 0, 0, .3); font: 14px ${SANS} }
#try-it summary { cursor: pointer; padding: .5rem 1rem; font-weight: 600 }
#try-it form, #try-it output { display: grid; gap: .5rem; padding: 0 1rem 1rem }
#try-it label { display: grid; gap: .2rem }
#try-it input, #try-it select, #try-it textarea, #try-it pre { font: 13px ${MONO} }
#try-it pre { margin: 0; padding: .5rem; background: #f4f4f4; white-space: pre-wrap;
  overflow-wrap: anywhere }
#try-it [hidden], #try-it-headers:empty, #try-it-answer:empty { display: none }
#try-it-status { margin: 0; font-weight: 600 }
</style>
</head>
<body>
<redoc theme="${escapeAttribute(JSON.stringify(THEME))}" expand-responses="200,201" download-definition-url="${escapeAttribute(specUrl)}"></redoc>
<aside id="try-it" aria-label="Try it">
<details>
<summary>Try it</summary>
<form id="try-it-form" hidden>
<label>API key <input name="key" type="password" autocomplete="off" spellcheck="false" placeholder="sent as Authorization: Bearer …, kept in this tab only"></label>
<label>Operation <select name="operation"></select></label>
<div id="try-it-parameters"></div>
<label id="try-it-body-label">Body (JSON) <textarea name="body" rows="6" spellcheck="false"></textarea></label>
<button type="submit">Send</button>
</form>
<output form="try-it-form" aria-live="polite">
<p id="try-it-status"></p>
<pre id="try-it-headers" aria-label="Response headers"></pre>
<pre id="try-it-answer" aria-label="Response body"></pre>
</output>
</details>
</aside>
<script src="${BUNDLE_URL}"></script>
<script src="${SCRIPT_URL}" data-spec-url="${escapeAttribute(specUrl)}"></script>
</body>
</html>
`

/** True when Accept-Encoding allows gzip (by name or `*`) with a non-zero quality. */
const acceptsGzip = (header = '') =>
  header.split(',').some((part) => {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    return (coding === 'gzip' || coding === '*') && (q === undefined || Number(q.slice(2)) > 0)
  })

/** Serves the script `load` gives, read and compressed on first use (a failed read is tried
 * again on the next request), so building an app stays cheap. */
function serveScript(
  app: FastifyInstance,
  url: string,
  cacheControl: string,
  load: () => Promise<string>,
): void {
  let asset: Promise<{ body: Buffer; gzipped: Buffer; etag: string }> | undefined
  const prepare = async () => {
    const body = Buffer.from(await load())
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    return { body, gzipped: await promisify(gzip)(body), etag }
  }
  const config = { public: true, operation: 'docsAsset' }
  app.get(url, { config, schema: { hide: true } }, async (request, reply) => {
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
    const tags = request.headers['if-none-match']?.split(',').map((t) => t.trim()) ?? []
    if (tags.some((t) => t === '*' || t === etag || t === `W/${etag}`))
      return reply.code(304).send()
    reply.type('text/javascript; charset=utf-8')
    if (!acceptsGzip(request.headers['accept-encoding'])) return body
    reply.header('content-encoding', 'gzip')
    return gzipped
  })
}

/** `npm run build` copies the bundle into dist/, beside the service's: the image ships it alone. */
async function readBundle(): Promise<string> {
  try {
    return await readFile(new URL('redoc.standalone.js', import.meta.url), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    // A checkout run from src/: the redoc package's own file.
    const path = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js')
    return readFile(path, 'utf8')
  }
}

/** `specUrl`: where the page fetches the OpenAPI document from. */
export async function docsPage(app: FastifyInstance, opts: { specUrl?: string }): Promise<void> {
  const html = page(opts.specUrl ?? '/v1/openapi.json')
  const config = { public: true, operation: 'docs' }
  app.get('/docs', { config, schema: { hide: true } }, async (_request, reply) => {
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', DOCS_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
    return html
  })
  // The Redocly logo of the sidebar's footer, the page's only outside call, is left blank; the page
  // test fails if an upgrade of Redoc brings another.
  serveScript(app, BUNDLE_URL, 'public, max-age=86400', async () =>
    (await readBundle()).replace(
      'https://cdn.redoc.ly/redoc/logo-mini.svg',
      "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
    ),
  )
  // Revalidated on every load: it goes with the page's HTML, which changes with the service.
  // Beside this module in src/http/, and beside the service's bundle in dist/ (scripts/build.ts).
  serveScript(app, SCRIPT_URL, 'no-cache', () =>
    readFile(new URL('docs-page-script.js', import.meta.url), 'utf8'),
  )
}
