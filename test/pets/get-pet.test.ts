import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createPet, json, testApp } from '../support/app.js'
import { badRequest } from '../support/errors.js'

describe('getPet', () => {
  test('200 with the pet', async (t) => {
    const a = await testApp(t)
    await createPet(a, { name: 'Rex', categoryId: 42, status: 'sold' })
    const res = await a.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '{"id":1,"name":"Rex","categoryId":42,"status":"sold"}')
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  })

  test('a JSON number literal beyond 2^53 in the body keeps every digit', async (t) => {
    const a = await testApp(t)
    await createPet(a, '{"name":"Rex","categoryId":9007199254740993,"status":"sold"}')
    const res = await a.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(res.body, '{"id":1,"name":"Rex","categoryId":9007199254740993,"status":"sold"}')
  })

  test('404 for an unknown id, including the int64 extremes', async (t) => {
    const a = await testApp(t)
    for (const id of ['1', '0', '-1', '9223372036854775807', '-9223372036854775808']) {
      const res = await a.call({ method: 'GET', url: `/v1/pets/${id}` })
      assert.equal(res.statusCode, 404, id)
      assert.deepEqual(json(res), {
        code: 'not_found',
        message: `no pet with id ${id}`,
        status: 404,
      })
    }
  })

  test('400 for a petId that is not a decimal int64', async (t) => {
    const a = await testApp(t)
    const body = badRequest("path parameter 'petId' must be a 64-bit integer")
    const ids = [
      'abc',
      '1.0',
      '1e3',
      '+1',
      '01',
      '0x1f',
      '%20',
      '9223372036854775808',
      '-9223372036854775809',
      '1'.repeat(300),
    ]
    for (const id of ids) {
      const res = await a.call({ method: 'GET', url: `/v1/pets/${id}` })
      assert.equal(res.statusCode, 400, id)
      assert.deepEqual(json(res), body, id)
    }
  })
})
