// The `petstore` program: its commands, each group registered by its own module.
import { Command } from 'commander'
import packageJson from '../../package.json' with { type: 'json' }
import { addBackupCommand } from './backup-command.js'
import { addKeysCommand } from './keys-command.js'
import { addMigrateCommand } from './migrate-command.js'
import { addSeedCommand } from './seed-command.js'
import { addServeCommand } from './serve-command.js'

export function buildProgram(): Command {
  const program = new Command('petstore')
    .description(
      'Pet store catalogue service. Settings come from the environment (see `petstore serve --help`).',
    )
    .version(packageJson.version, '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .exitOverride()
  // In this order in `petstore --help`.
  addServeCommand(program)
  addMigrateCommand(program)
  addBackupCommand(program)
  addSeedCommand(program)
  addKeysCommand(program)
  return program
}
