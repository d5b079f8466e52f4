// Durations written as a whole number and a unit (`500ms`, `30s`, `2w`): one syntax, parsed in
// one place, with the units and the numbers each caller accepts.

const MS_PER_UNIT = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
} as const

export type DurationUnit = keyof typeof MS_PER_UNIT

/**
 * A parser of `<count><unit>` into milliseconds, null when the text is not such a duration.
 * `count` is the pattern of the number the caller accepts (by default any digits, zero included).
 */
export function durationParser(
  units: readonly DurationUnit[],
  count = '\\d+',
): (text: string) => number | null {
  const syntax = new RegExp(`^(${count})(${units.join('|')})$`)
  return (text) => {
    const m = syntax.exec(text)
    return m ? Number(m[1]) * MS_PER_UNIT[m[2] as DurationUnit] : null
  }
}
