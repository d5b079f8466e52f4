// One deadline per request for every wait it makes on the database (the data version, a
// connection, each statement), so that their sum is bounded too, not only each wait.

/** The time, on performance.now()'s clock, by which the database must have answered a request. */
export type Deadline = number

/** Milliseconds left before `deadline`, at most `limitMs` (0 or less: it has passed). */
export function remainingMs(deadline: Deadline | undefined, limitMs: number): number {
  return deadline === undefined ? limitMs : Math.min(limitMs, deadline - performance.now())
}

/** The earliest of the deadlines given (undefined only when none is). */
export function earliest(deadlines: readonly (Deadline | undefined)[]): Deadline | undefined {
  let first: Deadline | undefined
  for (const d of deadlines) if (d !== undefined && (first === undefined || d < first)) first = d
  return first
}
