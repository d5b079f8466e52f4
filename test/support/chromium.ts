// Debian's Chromium driven by playwright-core, for the tests of what a reader of /docs sees: a
// page that records every request it makes and every problem it meets (a CSP violation is
// reported as a console error).
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import type { TestContext } from 'node:test'
import { chromium, type Page, type Request } from 'playwright-core'

const CHROMIUM = '/usr/bin/chromium'

export interface WatchedPage {
  page: Page
  /** Every request the page made, in order. */
  requests: Request[]
  /** Failed requests, console errors and uncaught errors, as text. */
  problems: string[]
}

/** A fresh browser (closed after `t`) with one page of 1280×900 pixels. */
export async function openPage(t: TestContext): Promise<WatchedPage> {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: install Debian's chromium package (npm run system-deps)`,
  )
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.after(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const requests: Request[] = []
  const problems: string[] = []
  context.on('request', (r) => requests.push(r))
  context.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`))
  const page = await context.newPage()
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  return { page, requests, problems }
}
