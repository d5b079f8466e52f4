// The "Try it" panel of /docs in Debian's Chromium: a reader types a key, sends operations from the
// page to the service, and reads each answer as received, int64 values with every digit.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Page, Request } from 'playwright-core'
import { testApp } from '../support/app.js'
import { openPage } from '../support/chromium.js'
import { TEST_STORE } from '../support/postgres.js'

const panel = (page: Page) => page.getByRole('complementary', { name: 'Try it' })

/** The panel's answer once one has arrived: the status line, the header lines and the body. */
async function answer(page: Page) {
  const status = page.locator('#try-it-status')
  await status.filter({ hasText: /: \d{3}/ }).waitFor()
  return {
    status: await status.textContent(),
    headers: (await page.locator('#try-it-headers').textContent())?.split('\n') ?? [],
    body: await page.locator('#try-it-answer').textContent(),
  }
}

/** Sends the form and waits for the answer to this request, not the one shown before. */
async function send(page: Page) {
  await page.evaluate("document.getElementById('try-it-status').textContent = ''")
  await panel(page).getByRole('button', { name: 'Send' }).click()
  return answer(page)
}

/**
 * Each request the page made (its search worker's blob: aside) as `<to origin?> <method>
 * <target> <Authorization>`.
 */
function described(requests: Request[], origin: string): Promise<string[]> {
  const lines = requests
    .filter((r) => !r.url().startsWith('blob:'))
    .map(async (r) => {
      const url = new URL(r.url())
      const authorization = (await r.allHeaders()).authorization
      return `${url.origin === origin} ${r.method()} ${url.pathname}${url.search} ${authorization}`
    })
  return Promise.all(lines)
}

describe('GET /docs, "Try it"', () => {
  test('sends a create and a list with the key typed in, and shows the answers as received', async (t) => {
    const { app, key, sql } = await testApp(t)
    const origin = await app.listen({ port: 0, host: '127.0.0.1' })
    const { page, requests, problems } = await openPage(t)
    await page.goto(`${origin}/docs#tag/animals/operation/createPet`)
    await page.getByText('Try it', { exact: true }).click()
    const operation = panel(page).getByLabel('Operation')
    // Opened on the operation the address names, as Redoc's menu does.
    await page.locator('#try-it-form:not([hidden])').waitFor()
    assert.equal(await operation.inputValue(), 'createPet')
    assert.deepEqual(await operation.locator('option').allTextContents(), [
      'GET /pets (List all animals)',
      'POST /pets (Add an animal)',
      'GET /pets/{petId} (Get an animal)',
      'GET /store/orders (List store orders)',
    ])
    await panel(page).getByLabel('API key').fill(key)

    // The body starts as the document's example, which the service takes.
    const body = panel(page).getByLabel('Body (JSON)')
    assert.equal(
      await body.inputValue(),
      '{\n  "name": "Rex",\n  "categoryId": 12,\n  "status": "available"\n}',
    )
    const rex = '{"id":1,"name":"Rex","categoryId":12,"status":"available"}'
    const created = await send(page)
    assert.equal(created.status, 'POST /v1/pets: 201 Created')
    assert.ok(created.headers.includes('location: /v1/pets/1'), created.headers.join('\n'))
    assert.ok(created.headers.includes('content-type: application/json; charset=utf-8'))
    assert.equal(created.body, rex)

    // An int64 past 2^53 comes back with every digit: the body is shown as received.
    await body.fill('{"name":"Max","categoryId":9223372036854775807}')
    const max = '{"id":2,"name":"Max","categoryId":9223372036854775807}'
    const big = await send(page)
    assert.equal(big.status, 'POST /v1/pets: 201 Created')
    assert.equal(big.body, max)

    await operation.selectOption('listPets')
    assert.ok(await body.isHidden(), 'a list has no body')
    const listed = await send(page)
    assert.equal(listed.status, 'GET /v1/pets: 200 OK')
    assert.equal(listed.body, `[${rex},${max}]`)

    await panel(page).getByLabel('limit (query)').fill('1')
    const limited = await send(page)
    assert.equal(limited.status, 'GET /v1/pets?limit=1: 200 OK')
    assert.equal(limited.body, `[${rex}]`)
    const next = `link: <${origin}/v1/pets?limit=1&cursor=djE6MQ>; rel="next"`
    assert.ok(limited.headers.includes(next), limited.headers.join('\n'))

    // The largest id there can be, written by another process.
    const overriding = TEST_STORE === 'postgres' ? ' OVERRIDING SYSTEM VALUE' : ''
    await sql(
      `INSERT INTO pets (id, name, category_id, status, created_at)${overriding} VALUES (9223372036854775807, 'Last', 1, 'sold', 0)`,
    )
    await operation.selectOption('getPet')
    await panel(page).getByLabel('petId (path, required)').fill('9223372036854775807')
    const got = await send(page)
    assert.equal(got.status, 'GET /v1/pets/9223372036854775807: 200 OK')
    assert.equal(
      got.body,
      '{"id":9223372036854775807,"name":"Last","categoryId":1,"status":"sold"}',
    )

    // The key goes as the Authorization header of the API's requests, to this origin only.
    assert.deepEqual(problems, [])
    const keyed = `Bearer ${key}`
    assert.deepEqual(await described(requests, origin), [
      'true GET /docs undefined',
      'true GET /docs/redoc.standalone.js undefined',
      'true GET /docs/page.js undefined',
      'true GET /v1/openapi.json undefined',
      `true POST /v1/pets ${keyed}`,
      `true POST /v1/pets ${keyed}`,
      `true GET /v1/pets ${keyed}`,
      `true GET /v1/pets?limit=1 ${keyed}`,
      `true GET /v1/pets/9223372036854775807 ${keyed}`,
    ])
  })

  test('keeps the key in the tab across reloads, and answers 401 once it is cleared', async (t) => {
    const { app, key } = await testApp(t)
    const origin = await app.listen({ port: 0, host: '127.0.0.1' })
    const { page, problems } = await openPage(t)
    await page.goto(`${origin}/docs`)
    await page.getByText('Try it', { exact: true }).click()
    await page.locator('#try-it-form:not([hidden])').waitFor()
    await panel(page).getByLabel('API key').fill(key)
    assert.equal(await page.evaluate('sessionStorage.getItem("petstore.apiKey")'), key)
    assert.equal(await page.evaluate('localStorage.length'), 0)

    await page.reload()
    await page.locator('#try-it-form').waitFor({ state: 'attached' })
    // Opened after a choice in Redoc's menu, the panel offers that operation.
    await page.getByRole('menuitem', { name: 'animals', exact: true }).click()
    await page.getByRole('menuitem', { name: 'Get an animal', exact: true }).click()
    await page.waitForURL(/#tag\/animals\/operation\/getPet$/)
    await page.getByText('Try it', { exact: true }).click()
    await page.locator('#try-it-form:not([hidden])').waitFor()
    assert.equal(await panel(page).getByLabel('Operation').inputValue(), 'getPet')
    assert.equal(await panel(page).getByLabel('API key').inputValue(), key)
    await panel(page).getByLabel('Operation').selectOption('listPets')
    assert.equal((await send(page)).status, 'GET /v1/pets: 200 OK')

    await panel(page).getByLabel('API key').fill('')
    assert.equal(await page.evaluate('sessionStorage.length'), 0)
    const refused = await send(page)
    assert.equal(refused.status, 'GET /v1/pets: 401 Unauthorized')
    assert.ok(
      refused.headers.includes('www-authenticate: Bearer realm="petstore"'),
      refused.headers.join('\n'),
    )
    assert.deepEqual(problems, [
      `console: Failed to load resource: the server responded with a status of 401 (Unauthorized)`,
    ])
  })
})
