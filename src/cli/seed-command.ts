// `petstore seed`'s options and help; the seeding itself is seed.ts.
import { type Command, Option } from 'commander'
import { wholeNumberArg } from './args.js'
import { withStore } from './command-context.js'
import {
  DEFAULT_BATCH_SIZE,
  MAX_BATCH_SIZE,
  MAX_SEED_COUNT,
  progressReporter,
  type SeedStatus,
  seedCommand,
  seedStatuses,
} from './seed.js'

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
      DEFAULT_BATCH_SIZE,
    )
    .addHelpText(
      'after',
      '\nEvery tenth pet has a categoryId beyond 2^53; the others have categories 1 to 100.\n' +
        'Progress goes to stderr (a bar on a terminal, a line per tenth otherwise), the summary to stdout.',
    )
    .action(async (opts: { count: number; status: SeedStatus; batchSize: number }) => {
      const now = () => performance.now()
      await withStore((store) =>
        seedCommand(
          store,
          opts,
          process.stdout,
          progressReporter(process.stderr, opts.count, now),
          now,
        ),
      )
    })
}
