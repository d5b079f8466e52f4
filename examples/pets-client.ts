// Lists, creates and pages through pets with the typed client. Run against a running service:
//   PETSTORE_URL=http://127.0.0.1:8080/v1 PETSTORE_KEY=<key> node --import tsx examples/pets-client.ts
import {
  createPetstoreClient,
  type NewPet,
  type Pet,
  type PetstoreClient,
  PetstoreError,
} from '@petstore/client'

const show = (pet: Pet) =>
  `#${pet.id} ${pet.name} (category ${pet.categoryId}, ${pet.status ?? 'no status'})`

const newPets: NewPet[] = [
  { name: 'Rex', categoryId: 1n, status: 'available' },
  // The largest int64: as a JS number it would turn into 9223372036854775808.
  { name: 'Luna', categoryId: 9223372036854775807n, status: 'pending' },
  { name: 'Milo', categoryId: -9223372036854775808n, status: 'sold' },
  { name: 'Bella', categoryId: 2n },
  { name: 'Max', categoryId: 3n, status: 'available' },
]

async function run(client: PetstoreClient): Promise<void> {
  const page = await client.api.GET('/pets', { params: { query: { limit: 10 } } })
  if (page.error) throw new PetstoreError(page.response, page.error)
  console.log(`first page: ${page.data.length} pets`)
  for (const pet of page.data) console.log(`  ${show(pet)}`)

  for (const body of newPets) {
    const created = await client.api.POST('/pets', { body })
    if (created.error) throw new PetstoreError(created.response, created.error)
    console.log(`created ${show(created.data)} at ${created.response.headers.get('location')}`)
  }

  // listAllPets follows rel="next" and waits out a 429's Retry-After, so a walk through a large
  // catalogue outlasts the key's rate limit.
  console.log('all pets, 100 per page:')
  for await (const pet of client.listAllPets({ limit: 100 })) console.log(`  ${show(pet)}`)

  console.log('available pets:')
  for await (const pet of client.listAllPets({ status: 'available', limit: 100 })) {
    console.log(`  ${show(pet)}`)
  }
}

const baseUrl = process.env.PETSTORE_URL
const apiKey = process.env.PETSTORE_KEY
if (!baseUrl || !apiKey) {
  console.error(
    'usage: PETSTORE_URL=<API root, e.g. http://127.0.0.1:8080/v1> PETSTORE_KEY=<API key>',
  )
  console.error('         node --import tsx examples/pets-client.ts')
  process.exit(2)
}
try {
  await run(createPetstoreClient({ baseUrl, apiKey }))
} catch (err) {
  if (!(err instanceof PetstoreError)) throw err
  console.error(`pets-client: ${err.message}`)
  process.exit(1)
}
