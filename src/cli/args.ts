// Parsers of command-line values: each refuses what it cannot take with the form it expects.
import { InvalidArgumentError } from 'commander'
import { durationParser } from '../duration.js'

/** `90s`, `30m`, `12h`, `30d`, `2w`: from 1 to 9,999,999 of a unit, written without a leading zero. */
const keyLifetime = durationParser(['s', 'm', 'h', 'd', 'w'], '[1-9][0-9]{0,6}')

export function durationArg(text: string): number {
  const ms = keyLifetime(text)
  if (ms === null)
    throw new InvalidArgumentError('expected a duration such as 90s, 30m, 12h, 30d or 2w')
  return ms
}

export function nameArg(text: string): string {
  if (!/^[\x20-\x7e]{1,100}$/.test(text) || text.trim() === '') {
    throw new InvalidArgumentError('expected 1 to 100 printable ASCII characters')
  }
  return text
}

export function wholeNumberArg(max: number): (text: string) => number {
  return (text) => {
    const n = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : Number.NaN
    if (!(n <= max)) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`)
    return n
  }
}
