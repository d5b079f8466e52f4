// `petstore keys create|list|revoke`'s options and help; what they do is keys.ts.
import type { Command } from 'commander'
import { clockFor } from '../server.js'
import { durationArg, nameArg } from './args.js'
import { UsageError, withStore } from './command-context.js'
import { createKeyCommand, listKeysCommand, revokeKeyCommand } from './keys.js'

export function addKeysCommand(program: Command): void {
  const keys = program.command('keys').description('manage API keys')
  keys
    .command('create')
    .description('create a key and print it once, alone on the last line')
    .requiredOption('--name <name>', 'who or what the key is for', nameArg)
    .option(
      '--expires-in <duration>',
      'lifetime, e.g. 30d, 12h, 2w (default: no expiry)',
      durationArg,
    )
    .action(async (opts: { name: string; expiresIn?: number }) => {
      await withStore((store, cfg) =>
        createKeyCommand(store, clockFor(cfg), opts.name, opts.expiresIn ?? null, process.stdout),
      )
    })
  keys
    .command('list')
    .description('list keys (ids, names, states; never the keys themselves)')
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { json?: boolean }) => {
      await withStore((store, cfg) =>
        listKeysCommand(store, clockFor(cfg), opts.json === true, process.stdout),
      )
    })
  keys
    .command('revoke')
    .description('revoke a key by id; it is refused from its next request on')
    .argument('<id>', 'the key id shown by `keys list`')
    .action(async (id: string) => {
      const revoked = await withStore((store, cfg) =>
        revokeKeyCommand(store, clockFor(cfg), id, process.stdout),
      )
      if (!revoked) throw new UsageError(`no active API key with id ${id}`)
    })
}
