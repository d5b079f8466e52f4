/** The service's only source of time, injected so that tests can move it (for example past a sunset). */
export interface Clock {
  now(): Date
  /** now() in epoch milliseconds, for the checks every request makes: no Date allocated. */
  nowMs(): number
}

/** A clock read from `nowMs`: now() is always the same instant as a Date. */
function clockFrom(nowMs: () => number): Clock {
  return { now: () => new Date(nowMs()), nowMs }
}

export const systemClock: Clock = clockFrom(Date.now)

/** A clock that starts at `start` and runs on in real time from the moment it is made. */
export function clockStartingAt(start: Date): Clock {
  const offset = start.getTime() - Date.now()
  return clockFrom(() => Date.now() + offset)
}

/** A clock that moves only when told: for tests. */
export function manualClock(
  start: Date,
): Clock & { set(d: Date): void; advance(ms: number): void } {
  let t = start.getTime()
  return {
    ...clockFrom(() => t),
    set: (d) => {
      t = d.getTime()
    },
    advance: (ms) => {
      t += ms
    },
  }
}
