// The reference page at /docs: Redoc, served by the service itself, renders the served OpenAPI
// document; Debian's Chromium checks what a reader sees and that nothing leaves the service. The
// "Try it" panel is tested in docs-try-it.test.ts.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { isLosslessNumber, parse } from 'lossless-json'
import type { Locator } from 'playwright-core'
import { json, testApp } from '../support/app.js'
import { openPage } from '../support/chromium.js'
import { storeIndependent } from '../support/stores.js'

const SCREENSHOT = new URL('../../docs/screenshots/docs-page.png', import.meta.url)
const BUNDLE = '/docs/redoc.standalone.js'
const SCRIPT = '/docs/page.js'
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self'; connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; " +
  "frame-ancestors 'none'"

/** What the test uses of the browser's window: it compiles without the DOM types. */
interface Browser {
  getComputedStyle(element: unknown): { textDecorationLine: string }
}

/**
 * The range Redoc shows for each int64 schema of the served document, `[ min .. max ]`, its
 * bounds read with every digit.
 */
function int64Ranges(document: string): Set<string> {
  const ranges = new Set<string>()
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return
    const schema = node as Record<string, unknown>
    if (schema.format === 'int64') {
      assert.ok(isLosslessNumber(schema.minimum) && isLosslessNumber(schema.maximum), 'bounded')
      ranges.add(`[ ${schema.minimum.value} .. ${schema.maximum.value} ]`)
    }
    for (const child of Object.values(schema)) visit(child)
  }
  visit(parse(document))
  return ranges
}

/** The npm package's bundle with its one outside call, the Redocly logo, blanked. */
function expectedBundle(): Buffer {
  const path = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js')
  const original = readFileSync(path, 'utf8')
  assert.equal(original.split('https://cdn.redoc.ly/').length, 2, 'the bundle names the CDN once')
  return Buffer.from(
    original.replace(
      'https://cdn.redoc.ly/redoc/logo-mini.svg',
      "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
    ),
  )
}

storeIndependent(() => {
  describe('GET /docs', () => {
    test('is an HTML page, without a key, that loads its scripts from the service under a strict CSP', async (t) => {
      const { app } = await testApp(t)
      const res = await app.inject({ method: 'GET', url: '/docs' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
      assert.equal(res.headers['content-security-policy'], CSP)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['referrer-policy'], 'no-referrer')
      assert.match(res.body, /^<!doctype html>/)
      // No spec-url: Redoc would fetch the document and round its int64 bounds with JSON.parse.
      assert.match(
        res.body,
        /<redoc theme="[^"]+" expand-responses="200,201" download-definition-url="\/v1\/openapi\.json"><\/redoc>/,
      )
      // Scripts by URL only: the CSP allows no inline script.
      assert.deepEqual(res.body.match(/<script[^>]*>/g), [
        `<script src="${BUNDLE}">`,
        `<script src="${SCRIPT}" data-spec-url="/v1/openapi.json">`,
      ])
      assert.doesNotMatch(res.body, /https?:\/\//)
    })

    const scripts = [
      { what: "redoc's bundle", url: BUNDLE, cache: 'public, max-age=86400', body: expectedBundle },
      {
        what: 'the page script, revalidated on each load',
        url: SCRIPT,
        cache: 'no-cache',
        body: () => readFileSync(new URL('../../src/http/docs-page-script.js', import.meta.url)),
      },
    ]
    for (const script of scripts) {
      test(`serves ${script.what}, with an ETag, gzipped on request`, async (t) => {
        const { app } = await testApp(t)
        const body = script.body()
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
        const get = (headers: Record<string, string> = {}) =>
          app.inject({ method: 'GET', url: script.url, headers })

        const plain = await get()
        assert.equal(plain.statusCode, 200)
        assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8')
        assert.equal(plain.headers['cache-control'], script.cache)
        assert.equal(plain.headers.etag, etag)
        assert.equal(plain.headers.vary, 'accept-encoding')
        assert.equal(plain.headers['x-content-type-options'], 'nosniff')
        assert.equal(plain.headers['content-encoding'], undefined)
        assert.ok(plain.rawPayload.equals(body), 'the body is the script')

        const gzipped = await get({ 'accept-encoding': 'br, gzip, deflate' })
        assert.equal(gzipped.statusCode, 200)
        assert.equal(gzipped.headers['content-encoding'], 'gzip')
        assert.equal(gzipped.headers.etag, etag)
        assert.ok(gunzipSync(gzipped.rawPayload).equals(body), 'the gzipped body is the script')

        const refused = await get({ 'accept-encoding': 'gzip;q=0' })
        assert.equal(refused.headers['content-encoding'], undefined)
        assert.ok(refused.rawPayload.equals(body))

        const revalidated = await get({ 'if-none-match': `"other", ${etag}` })
        assert.equal(revalidated.statusCode, 304)
        assert.equal(revalidated.headers.etag, etag)
        assert.equal(revalidated.body, '')
      })
    }

    test('is not part of the OpenAPI document', async (t) => {
      const { app } = await testApp(t)
      const doc = json(await app.inject({ method: 'GET', url: '/v1/openapi.json' })) as {
        paths: Record<string, unknown>
      }
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.includes('docs')),
        [],
      )
    })

    test('shows a reader in Chromium the groups, the tag, the operations and the deprecation, with nothing fetched from elsewhere', async (t) => {
      const { app } = await testApp(t)
      const origin = await app.listen({ port: 0, host: '127.0.0.1' })
      const { page, requests, problems } = await openPage(t)

      const response = await page.goto(`${origin}/docs`)
      assert.equal(response?.status(), 200)
      const store = page.getByRole('menuitem', { name: 'Store', exact: true })
      await store.waitFor() // Redoc has fetched the document and rendered it
      const pets = page.getByRole('menuitem', { name: 'Pets', exact: true })

      const visible = async (locator: Locator, what: string) =>
        assert.ok(await locator.isVisible(), `${what} is visible`)
      await visible(store.getByText('Store', { exact: true }), 'the group "Store"')
      await visible(pets.getByText('Pets', { exact: true }), 'the group "Pets"')
      await visible(
        store
          .getByRole('menuitem', { name: 'orders', exact: true })
          .getByText('orders', { exact: true }),
        'the tag "orders" in "Store"',
      )
      const petsTag = pets.getByRole('menuitem', { name: 'animals', exact: true })
      await visible(petsTag.getByText('animals', { exact: true }), 'the tag "animals" in "Pets"')
      // Each operation once: the tag "animals" is in one group only.
      assert.equal(await page.getByRole('menuitem', { name: 'animals', exact: true }).count(), 1)

      const summaries = ['List all animals', 'Add an animal', 'Get an animal']
      for (const summary of [...summaries, 'List store orders']) {
        await visible(
          page.locator('h2', { hasText: summary }).first(),
          `the operation "${summary}"`,
        )
      }
      const deprecated = await page
        .locator('h2')
        .filter({ hasText: 'Deprecated' })
        .allTextContents()
      assert.deepEqual(
        deprecated.map((text) => text.replace(/\s+/g, ' ').trim()),
        ['Get an animal Deprecated'],
        'getPet, shown once, is the one operation marked deprecated',
      )
      await visible(
        page.locator('h2', { hasText: 'Get an animal' }).first().getByText('Deprecated'),
        'the "Deprecated" badge of getPet',
      )

      // Opening the tag in the menu lists the operations; getPet is struck through there.
      await petsTag.getByText('animals', { exact: true }).click()
      const decoration: Record<string, string> = {}
      for (const summary of summaries) {
        const item = petsTag.getByRole('menuitem', { name: summary, exact: true })
        await visible(item, `the menu entry "${summary}"`)
        decoration[summary] = await item
          .locator('label')
          .evaluate(
            (label) =>
              (globalThis as unknown as Browser).getComputedStyle(label).textDecorationLine,
          )
      }
      assert.deepEqual(decoration, {
        'List all animals': 'none',
        'Add an animal': 'none',
        'Get an animal': 'line-through',
      })

      // The screenshot shows the menu opened on getPet and its deprecation.
      await petsTag.getByRole('menuitem', { name: 'Get an animal', exact: true }).click()
      await page.waitForURL(/#tag\/animals\/operation\/getPet$/)
      // Waits for Redoc to scroll getPet to the top (given as text: no DOM types here).
      await page.waitForFunction(`(() => {
      const heading = [...document.querySelectorAll('h2')]
        .find((h) => h.textContent.includes('Get an animal'))
      const top = heading ? heading.getBoundingClientRect().top : -1
      return top >= 0 && top < 100
    })()`)
      // The committed screenshot is rewritten only when asked for: a test run changes no file.
      const update = process.env.PETSTORE_TEST_UPDATE_SCREENSHOT === '1'
      if (update) mkdirSync(new URL('.', SCREENSHOT), { recursive: true })
      const png = await page.screenshot({
        animations: 'disabled',
        ...(update ? { path: SCREENSHOT.pathname } : {}),
      })
      assert.equal(png.readUInt32BE(16), 1280, 'screenshot width')
      assert.equal(png.readUInt32BE(20), 900, 'screenshot height')

      assert.deepEqual(problems, [])
      const urls = requests.map((r) => r.url())
      assert.deepEqual(
        urls.filter((url) => new URL(url).origin !== origin),
        [],
        'every request went to the service',
      )
      assert.deepEqual(
        urls.filter((url) => !url.startsWith('blob:')).map((url) => new URL(url).pathname),
        ['/docs', BUNDLE, SCRIPT, '/v1/openapi.json'],
      )
    })

    test('shows in Chromium every int64 bound of the document with every digit', async (t) => {
      const { app } = await testApp(t)
      const origin = await app.listen({ port: 0, host: '127.0.0.1' })
      const document = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).body
      const expected = int64Ranges(document)
      assert.deepEqual([...expected].sort(), [
        '[ -9223372036854775808 .. 9223372036854775807 ]',
        '[ 1 .. 9223372036854775807 ]',
      ])
      const { page, problems } = await openPage(t)
      await page.goto(`${origin}/docs`)
      await page.getByRole('menuitem', { name: 'Store', exact: true }).waitFor()

      // Each int64 field Redoc shows reads `integer <int64> [ min .. max ]`.
      const text = await page.locator('redoc').innerText()
      const shown = [...text.matchAll(/^integer <int64> (.*)$/gm)].map(([, range]) => range)
      // Pet.id, categoryId (Pet and NewPet) and petId, in the bodies, answers and parameters
      // Redoc opens: 8 fields, 13 bounds past 2^53.
      assert.equal(shown.length, 8)
      assert.deepEqual(new Set(shown), expected)
      const bounds = text.match(/-?92233720368\d*/g) ?? []
      assert.equal(bounds.length, 13)
      assert.deepEqual(new Set(bounds), new Set(['-9223372036854775808', '9223372036854775807']))
      assert.doesNotMatch(text, /9223372036854776000/)

      // Redoc's download link gives the document as served, not as the page read it.
      assert.equal(
        await page.getByRole('link', { name: 'Download' }).getAttribute('href'),
        '/v1/openapi.json',
      )
      assert.deepEqual(problems, [])
    })
  })
})
