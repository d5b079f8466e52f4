// `petstore seed` as an operator runs it (`node dist/main.js seed ...`, stderr not a
// terminal), and its progress bar as a terminal would show it.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, type TestContext, test } from 'node:test'
import { progressReporter } from '../../src/cli/seed.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Pet, PetStatus } from '../../src/storage/store.js'
import { storeIndependent } from '../support/stores.js'
import { assertUsageErrors, type RunResult, workspace } from '../support/workspace.js'

const SUMMARY = /^seeded (\d+) pets in \d+\.\d{2}s \(\d+ pets\/s\)\n$/
const API_KEY = 'seed-test-key-0123456789'
const MIXED = ['available', 'pending', 'sold', undefined] as const

/** A workspace (see support/workspace.ts) that reads back what was seeded. */
function seedWorkspace(t: TestContext) {
  const w = workspace(t)
  const dbPath = w.dbPath
  const serve = async (): Promise<string> =>
    (await w.start([], { PETSTORE_API_KEYS: API_KEY })).origin
  /** Every pet in the database, read back through the store in pages. */
  const allPets = async (): Promise<Pet[]> => {
    const store = await openSqliteStore(dbPath)
    try {
      const pets: Pet[] = []
      for (;;) {
        const page = await store.listPets({
          afterId: pets.at(-1)?.id ?? null,
          status: null,
          limit: 1000,
        })
        if (page.length === 0) return pets
        pets.push(...page)
      }
    } finally {
      await store.close()
    }
  }
  return { dbPath, run: (args: string[]) => w.run(args), serve, allPets }
}

/** The n-th pet of a run, as documented: every tenth has a categoryId beyond 2^53. */
type SeedStatus = PetStatus | 'mixed' | 'none'

function expectedPet(id: number, n: number, status: SeedStatus): Pet {
  const categoryId = n % 10 === 0 ? 2n ** 53n + 1n + BigInt(n) : BigInt((n % 100) + 1)
  const s = status === 'mixed' ? MIXED[(n - 1) % 4] : status === 'none' ? undefined : status
  const pet: Pet = { id: BigInt(id), name: `pet-${n}`, categoryId }
  if (s !== undefined) pet.status = s
  return pet
}

function expectedPets(firstId: number, count: number, status: SeedStatus): Pet[] {
  return Array.from({ length: count }, (_, i) => expectedPet(firstId + i, i + 1, status))
}

function assertSummary(res: RunResult, count: number): void {
  assert.equal(res.code, 0, res.stderr)
  assert.equal(SUMMARY.exec(res.stdout)?.[1], String(count), res.stdout)
}

storeIndependent(() => {
  describe('petstore seed', { concurrency: true }, () => {
    test('seeds exactly the documented pets; a second run appends with ids that continue', async (t) => {
      const w = seedWorkspace(t)
      const first = await w.run(['seed', '--count', '2500'])
      assertSummary(first, 2500)
      assert.equal(first.stderr, 'seeded 2500/2500 pets (100%)\n')
      const seeded = await w.allPets()
      assert.deepEqual(seeded, expectedPets(1, 2500, 'mixed'))
      // The rule written out, for a few pets.
      assert.deepEqual(seeded[0], { id: 1n, name: 'pet-1', categoryId: 2n, status: 'available' })
      assert.deepEqual(seeded[3], { id: 4n, name: 'pet-4', categoryId: 5n })
      assert.deepEqual(seeded[9], {
        id: 10n,
        name: 'pet-10',
        categoryId: 9007199254741003n,
        status: 'pending',
      })
      assert.deepEqual(seeded[2499], { id: 2500n, name: 'pet-2500', categoryId: 9007199254743493n })

      const second = await w.run([
        'seed',
        '--count',
        '1200',
        '--batch-size',
        '500',
        '--status',
        'sold',
      ])
      assertSummary(second, 1200)
      // One line each time another tenth is done, not one per batch.
      assert.equal(
        second.stderr,
        'seeded 500/1200 pets (41%)\nseeded 1000/1200 pets (83%)\nseeded 1200/1200 pets (100%)\n',
      )
      assert.deepEqual(await w.allPets(), [
        ...expectedPets(1, 2500, 'mixed'),
        ...expectedPets(2501, 1200, 'sold'),
      ])
    })

    test('a running server serves seeded pets with every digit of their categoryIds', async (t) => {
      const w = seedWorkspace(t)
      const origin = await w.serve()
      const res = await w.run(['seed', '--count', '12', '--status', 'none'])
      assertSummary(res, 12)
      const list = await fetch(`${origin}/v1/pets?limit=100`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      })
      assert.equal(list.status, 200)
      const expected = expectedPets(1, 12, 'none').map(
        (p) => `{"id":${p.id},"name":"${p.name}","categoryId":${p.categoryId}}`,
      )
      assert.equal(expectedPets(1, 12, 'none').filter((p) => 'status' in p).length, 0)
      assert.equal(await list.text(), `[${expected.join(',')}]`)
      assert.match(expected[9]!, /"categoryId":9007199254741003}$/)
    })

    test('bad arguments exit 2 with a clear message and touch no database', async (t) => {
      const w = seedWorkspace(t)
      const invalid = (option: string, value: string, expected: string) =>
        `error: option '${option}' argument '${value}' is invalid. ${expected}`
      const count = 'expected a whole number from 1 to 100000000'
      const cases: [string[], string][] = [
        [['seed'], "error: required option '--count <n>' not specified"],
        [['seed', '--count', '0'], invalid('--count <n>', '0', count)],
        [['seed', '--count', 'abc'], invalid('--count <n>', 'abc', count)],
        [['seed', '--count', '-5'], invalid('--count <n>', '-5', count)],
        [['seed', '--count', '1.5'], invalid('--count <n>', '1.5', count)],
        [['seed', '--count', '100000001'], invalid('--count <n>', '100000001', count)],
        [['seed', '--count'], "error: option '--count <n>' argument missing"],
        [
          ['seed', '--count', '5', '--batch-size', '100001'],
          invalid('--batch-size <n>', '100001', 'expected a whole number from 1 to 100000'),
        ],
        [
          ['seed', '--count', '5', '--status', 'lost'],
          invalid(
            '--status <status>',
            'lost',
            'Allowed choices are mixed, available, pending, sold, none.',
          ),
        ],
      ]
      await assertUsageErrors(w, cases)
      assert.equal(existsSync(w.dbPath), false)
    })

    test('--help describes the options and exits 0', async (t) => {
      const w = seedWorkspace(t)
      for (const args of [
        ['seed', '--help'],
        ['help', 'seed'],
      ]) {
        const res = await w.run(args)
        assert.equal(res.code, 0, res.stderr)
        assert.equal(res.stderr, '')
        const lines = res.stdout.split('\n')
        assert.equal(lines[0], 'Usage: petstore seed [options]')
        for (const option of ['--count <n>', '--status <status>', '--batch-size <n>']) {
          assert.ok(
            lines.some((l) => l.startsWith(`  ${option} `)),
            `${option} in\n${res.stdout}`,
          )
        }
      }
      const top = await w.run(['--help'])
      assert.match(top.stdout, /^ {2}seed \[options\] +add generated pets/m)
    })
  })

  describe('seed progress', () => {
    /** A stream that records what is written, and a clock the test moves. */
    const recorder = (isTTY: boolean) => {
      const chunks: string[] = []
      return { chunks, stream: { isTTY, write: (s: string) => chunks.push(s) } }
    }

    test('on a terminal: one bar redrawn in place, at most every 100 ms, always at the end', () => {
      const { chunks, stream } = recorder(true)
      let now = 1000
      const progress = progressReporter(stream, 1000, () => now)
      now = 1050
      progress.update(250)
      now = 1100
      progress.update(500)
      now = 1200
      progress.update(750)
      now = 1250
      progress.update(1000)
      progress.finish()
      assert.deepEqual(chunks, [
        `\r\x1b[Kseeding [${'#'.repeat(7)}${'-'.repeat(23)}]  25%  250/1000 pets  5000 pets/s`,
        `\r\x1b[Kseeding [${'#'.repeat(22)}${'-'.repeat(8)}]  75%  750/1000 pets  3750 pets/s`,
        `\r\x1b[Kseeding [${'#'.repeat(30)}] 100%  1000/1000 pets  4000 pets/s`,
        '\n',
      ])
    })

    test('elsewhere: plain lines, never more than ten, the last at 100%', () => {
      const { chunks, stream } = recorder(false)
      const progress = progressReporter(stream, 1000, () => 0)
      for (let done = 1; done <= 1000; done++) progress.update(done)
      progress.finish()
      assert.deepEqual(
        chunks,
        Array.from(
          { length: 10 },
          (_, i) => `seeded ${(i + 1) * 100}/1000 pets (${(i + 1) * 10}%)\n`,
        ),
      )
    })
  })
})
