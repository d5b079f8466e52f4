// PetService.create on either store: without an Idempotency-Key, and with one whose claim could
// not be released. A name with U+0000 never reaches the service: the route's schema refuses it
// (create-pet.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { systemClock } from '../../src/clock.js'
import { PetService } from '../../src/pets/service.js'
import { StorageUnavailableError } from '../../src/storage/errors.js'
import type { IdempotencyClaimRef, Store } from '../../src/storage/store.js'
import { testStore } from '../support/app.js'

test('create without an Idempotency-Key stores each pet once, with exact 64-bit fields', async (t) => {
  const store = await testStore(t)
  const service = new PetService(store, systemClock)
  const first = await service.create({ name: 'first', categoryId: 1n }, 'key-1')
  const second = await service.create(
    { name: 'second', categoryId: 9007199254740993n, status: 'sold' },
    'key-1',
  )
  const stored = { id: 2n, name: 'second', categoryId: 9007199254740993n, status: 'sold' }
  assert.deepEqual(first, { pet: { id: 1n, name: 'first', categoryId: 1n }, replayed: false })
  assert.deepEqual(second, { pet: stored, replayed: false })
  assert.deepEqual(await store.getPet(2n), stored)
})

test('a claim whose release failed with its create is released before the key is claimed again', async (t) => {
  const store = await testStore(t)
  const fault = () => new StorageUnavailableError('the database disk is full; retry later')
  let failing = true
  // The fault fails the create and then the release of its claim, as a full disk does.
  const faulty: Store = Object.create(store, {
    createPet: {
      value: (...args: Parameters<Store['createPet']>) =>
        failing ? Promise.reject(fault()) : store.createPet(...args),
    },
    releaseIdempotencyKey: {
      value: (ref: IdempotencyClaimRef) =>
        failing ? Promise.reject(fault()) : store.releaseIdempotencyKey(ref),
    },
  })
  const service = new PetService(faulty, systemClock)
  const rex = { name: 'Rex', categoryId: 1n }
  await assert.rejects(service.create(rex, 'key-1', 'retry-me'), StorageUnavailableError)
  // Still failing: the retry reports the fault, not 409 for a claim nobody holds.
  await assert.rejects(service.create(rex, 'key-1', 'retry-me'), StorageUnavailableError)
  failing = false
  assert.deepEqual(await service.create(rex, 'key-1', 'retry-me'), {
    pet: { id: 1n, ...rex },
    replayed: false,
  })
  assert.deepEqual(await service.create(rex, 'key-1', 'retry-me'), {
    pet: { id: 1n, ...rex },
    replayed: true,
  })
})
