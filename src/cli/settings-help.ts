// The settings table config.ts parses them by, written for people: `serve --help`'s list, and
// .env.example (`npm run env:example`).
import { Help } from 'commander'
import { settings } from '../config.js'

/** Words of `text` in lines of at most `width` characters, each after `indent`. */
const wrap = (text: string, indent: string, width: number) =>
  new Help().boxWrap(text, width).replace(/^/gm, indent)

export function settingsHelp(): string {
  const entries = settings.map((s) => {
    const plain = (t: string) => t.replaceAll('`', '')
    const byDefault = s.default === '' ? 'unset' : plain(s.default)
    return `  ${s.env}\n${wrap(`${plain(s.description)} Default: ${byDefault}.`, '      ', 72)}`
  })
  return `\nSettings, read from the environment (or a .env file in the working directory):\n${entries.join('\n')}`
}

const ENV_EXAMPLE_HEAD = [
  '# Every setting of `petstore`, at its default. Copy this file to .env (read from the working',
  '# directory; the real environment wins over it) and uncomment what you change. A PETSTORE_* name',
  '# that is no setting stops the start (docs/operations.md, "Settings").',
  '# Generated from src/config.ts by `npm run env:example`; test/cli/env-example.test.ts keeps it so.',
]

/** .env.example: each setting commented out at its default, after its description and values. */
export function envExample(): string {
  const entries = settings.map((s) =>
    [
      wrap(s.description, '# ', 98),
      wrap(`Accepts ${s.accepts}.`, '# ', 98),
      `#${s.env}=${s.default}`,
    ].join('\n'),
  )
  return `${[ENV_EXAMPLE_HEAD.join('\n'), ...entries].join('\n\n')}\n`
}
