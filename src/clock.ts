/** The service's only source of time, injected so that tests can move it (for example past a sunset). */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock that starts at `start` and runs on in real time from the moment it is made. */
export function clockStartingAt(start: Date): Clock {
  const offset = start.getTime() - Date.now()
  return { now: () => new Date(Date.now() + offset) }
}

/** A clock that moves only when told: for tests. */
export function manualClock(
  start: Date,
): Clock & { set(d: Date): void; advance(ms: number): void } {
  let t = start.getTime()
  return {
    now: () => new Date(t),
    set: (d) => {
      t = d.getTime()
    },
    advance: (ms) => {
      t += ms
    },
  }
}
