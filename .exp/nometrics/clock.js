export const systemClock = { now: () => new Date() };
/** A clock that starts at `start` and runs on in real time from the moment it is made. */
export function clockStartingAt(start) {
    const offset = start.getTime() - Date.now();
    return { now: () => new Date(Date.now() + offset) };
}
/** A clock that moves only when told: for tests. */
export function manualClock(start) {
    let t = start.getTime();
    return {
        now: () => new Date(t),
        set: (d) => {
            t = d.getTime();
        },
        advance: (ms) => {
            t += ms;
        },
    };
}
//# sourceMappingURL=clock.js.map