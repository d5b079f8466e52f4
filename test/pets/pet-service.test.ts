// PetService.createThen, the callback form of create the fast lane uses: the same pet as create
// without an Idempotency-Key, on either store, through createPet's promise. A name with U+0000
// never reaches the service: the schema refuses it in both doors (create-pet.test.ts,
// fast-lane.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { systemClock } from '../../src/clock.js'
import { PetService } from '../../src/pets/service.js'
import { StorageUnavailableError } from '../../src/storage/errors.js'
import type { IdempotencyClaimRef, NewPet, Pet, Store } from '../../src/storage/store.js'
import { testStore } from '../support/app.js'

/** createThen as a promise of which callback it called, and with what. */
function createThen(service: PetService, pet: NewPet) {
  return new Promise<{ created?: Pet; failed?: unknown }>((resolve) =>
    service.createThen(
      pet,
      undefined,
      (created) => resolve({ created }),
      (failed) => resolve({ failed }),
    ),
  )
}

test('createThen stores the pet and hands it to `created`, as create does', async (t) => {
  const store = await testStore(t)
  const service = new PetService(store, systemClock)
  const viaCreate = await service.create({ name: 'first', categoryId: 1n }, 'key-1')
  const outcome = await createThen(service, {
    name: 'second',
    categoryId: 9007199254740993n,
    status: 'sold',
  })
  const second = { id: 2n, name: 'second', categoryId: 9007199254740993n, status: 'sold' }
  assert.deepEqual(viaCreate, { pet: { id: 1n, name: 'first', categoryId: 1n }, replayed: false })
  assert.deepEqual(outcome, { created: second })
  assert.deepEqual(await store.getPet(2n), second)
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
