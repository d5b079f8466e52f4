// `petstore seed`: fills the catalogue with generated pets, a whole batch per transaction, for
// trying the service out and for load tests.
import { type Command, Option } from 'commander'
import type { NewPet, PetStatus } from '../storage/store.js'
import { wholeNumberArg, withStore } from './command-context.js'

const MAX_SEED_COUNT = 100_000_000
const MAX_BATCH_SIZE = 100_000
const seedStatuses = ['mixed', 'available', 'pending', 'sold', 'none'] as const
type SeedStatus = (typeof seedStatuses)[number]

const CYCLE: readonly (PetStatus | undefined)[] = ['available', 'pending', 'sold', undefined]
/** 2^53 + 1: the first integer a JavaScript number cannot hold, so clients must keep int64 exact. */
const BEYOND_DOUBLE = 9_007_199_254_740_993n

/** The n-th pet of a run (n from 1); the same n always gives the same pet. */
function seedPet(n: number, status: SeedStatus): NewPet {
  const categoryId = n % 10 === 0 ? BEYOND_DOUBLE + BigInt(n) : BigInt((n % 100) + 1)
  const s = status === 'mixed' ? CYCLE[(n - 1) % 4] : status === 'none' ? undefined : status
  return s === undefined
    ? { name: `pet-${n}`, categoryId }
    : { name: `pet-${n}`, categoryId, status: s }
}

const BAR_WIDTH = 30
const REDRAW_MS = 100

const percent = (done: number, total: number) => Math.floor((done * 100) / total)
const rate = (done: number, ms: number) => Math.round((done * 1000) / Math.max(ms, 1))

/**
 * On a terminal, a bar redrawn in place; elsewhere (logs, pipes, CI) a plain line each time
 * another tenth of the total is done, so a log holds at most ten of them.
 */
export function progressReporter(
  stream: { isTTY?: boolean; write(chunk: string): unknown },
  total: number,
  now: () => number,
): { update(done: number): void; finish(): void } {
  const started = now()
  if (stream.isTTY !== true) {
    let shownTenths = 0
    return {
      update(done) {
        const tenths = Math.floor((done * 10) / total)
        if (tenths <= shownTenths) return
        shownTenths = tenths
        stream.write(`seeded ${done}/${total} pets (${percent(done, total)}%)\n`)
      },
      finish() {},
    }
  }
  let drawnAt = Number.NEGATIVE_INFINITY
  return {
    update(done) {
      const t = now()
      if (done < total && t - drawnAt < REDRAW_MS) return
      drawnAt = t
      const filled = Math.floor((done * BAR_WIDTH) / total)
      const bar = '#'.repeat(filled) + '-'.repeat(BAR_WIDTH - filled)
      const pct = `${percent(done, total)}%`.padStart(4)
      stream.write(
        `\r\x1b[Kseeding [${bar}] ${pct}  ${done}/${total} pets  ${rate(done, t - started)} pets/s`,
      )
    },
    finish() {
      if (drawnAt !== Number.NEGATIVE_INFINITY) stream.write('\n')
    },
  }
}

async function seed(opts: { count: number; status: SeedStatus; batchSize: number }) {
  const { count, batchSize, status } = opts
  const now = () => performance.now()
  await withStore(async (store) => {
    const progress = progressReporter(process.stderr, count, now)
    const started = now()
    for (let first = 1; first <= count; first += batchSize) {
      const last = Math.min(count, first + batchSize - 1)
      const batch: NewPet[] = new Array(last - first + 1)
      for (let n = first; n <= last; n++) batch[n - first] = seedPet(n, status)
      await store.insertPets(batch)
      progress.update(last)
    }
    progress.finish()
    const ms = now() - started
    process.stdout.write(
      `seeded ${count} pets in ${(ms / 1000).toFixed(2)}s (${rate(count, ms)} pets/s)\n`,
    )
  })
}

export function addSeedCommand(program: Command): void {
  program
    .command('seed')
    .description('add generated pets in large batches (names pet-1, pet-2, ...) for trying it out')
    .requiredOption(
      '--count <n>',
      `how many pets to add, 1 to ${MAX_SEED_COUNT}`,
      wholeNumberArg(MAX_SEED_COUNT),
    )
    .addOption(
      new Option(
        '--status <status>',
        'status of every pet; mixed cycles available, pending, sold, none',
      )
        .choices(seedStatuses)
        .default('mixed'),
    )
    .option(
      '--batch-size <n>',
      `pets per transaction, 1 to ${MAX_BATCH_SIZE}`,
      wholeNumberArg(MAX_BATCH_SIZE),
      10_000,
    )
    .addHelpText(
      'after',
      '\nEvery tenth pet has a categoryId beyond 2^53; the others have categories 1 to 100.\n' +
        'Progress goes to stderr (a bar on a terminal, a line per tenth otherwise), the summary to stdout.',
    )
    .action(seed)
}
