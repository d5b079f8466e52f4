import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { CreateItem } from '../../../src/storage/create-item.js'
import { decodeBatch, encodeBatch } from '../../../src/storage/sqlite/writer-messages.js'
import { forStore } from '../../support/stores.js'

forStore('sqlite', () => {
  test('a batch crosses to the writer thread as one string and comes back the same creates', () => {
    const items: CreateItem[] = [
      {
        pet: { name: 'Rex', categoryId: 9223372036854775807n, status: 'sold' },
        completes: undefined,
      },
      {
        pet: { name: 'é "日本" \\ 🐶\n', categoryId: -9223372036854775808n },
        completes: { apiKeyId: 'a1b2c3d4e5f6', key: 'order-7', token: 'c9f1' },
      },
      { pet: { name: 'x', categoryId: 0n, status: 'pending' }, completes: undefined },
    ]
    const batch = encodeBatch(items)
    assert.equal(typeof batch, 'string')
    assert.deepEqual(decodeBatch(batch), items)
    assert.deepEqual(decodeBatch(encodeBatch([])), [])
  })
})
