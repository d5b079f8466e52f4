// `serve --help`'s list of the settings it reads, from the table config.ts parses them by.
import { settings } from '../config.js'

/** Words of `text` in lines of at most `width` characters, each after `indent`. */
function wrap(text: string, indent: string, width: number): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  if (line !== '') lines.push(indent + line)
  return lines.join('\n')
}

export function settingsHelp(): string {
  const entries = settings.map((s) => {
    const plain = (t: string) => t.replaceAll('`', '')
    const byDefault = s.default === '' ? 'unset' : plain(s.default)
    return `  ${s.env}\n${wrap(`${plain(s.description)} Default: ${byDefault}.`, '      ', 72)}`
  })
  return `\nSettings, read from the environment (or a .env file in the working directory):\n${entries.join('\n')}`
}
