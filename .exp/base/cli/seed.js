export const MAX_SEED_COUNT = 100_000_000;
export const MAX_BATCH_SIZE = 100_000;
export const DEFAULT_BATCH_SIZE = 10_000;
export const seedStatuses = ['mixed', 'available', 'pending', 'sold', 'none'];
const CYCLE = ['available', 'pending', 'sold', undefined];
/** 2^53 + 1: the first integer a JavaScript number cannot hold, so clients must keep int64 exact. */
const BEYOND_DOUBLE = 9007199254740993n;
/**
 * The n-th pet of a run (n from 1); the same n always gives the same pet. Every tenth pet has a
 * categoryId beyond 2^53, the others categories 1 to 100.
 */
export function seedPet(n, status) {
    const categoryId = n % 10 === 0 ? BEYOND_DOUBLE + BigInt(n) : BigInt((n % 100) + 1);
    const s = status === 'mixed' ? CYCLE[(n - 1) % 4] : status === 'none' ? undefined : status;
    return s === undefined
        ? { name: `pet-${n}`, categoryId }
        : { name: `pet-${n}`, categoryId, status: s };
}
const BAR_WIDTH = 30;
const REDRAW_MS = 100;
const percent = (done, total) => Math.floor((done * 100) / total);
const rate = (done, ms) => Math.round((done * 1000) / Math.max(ms, 1));
/**
 * On a terminal, a bar redrawn in place; elsewhere (logs, pipes, CI) a plain line each time
 * another tenth of the total is done, so a log holds at most ten of them.
 */
export function progressReporter(stream, total, now) {
    const started = now();
    if (stream.isTTY !== true) {
        let shownTenths = 0;
        return {
            update(done) {
                const tenths = Math.floor((done * 10) / total);
                if (tenths <= shownTenths)
                    return;
                shownTenths = tenths;
                stream.write(`seeded ${done}/${total} pets (${percent(done, total)}%)\n`);
            },
            finish() { },
        };
    }
    let drawnAt = Number.NEGATIVE_INFINITY;
    let drawn = false;
    return {
        update(done) {
            const t = now();
            if (done < total && t - drawnAt < REDRAW_MS)
                return;
            drawnAt = t;
            drawn = true;
            const filled = Math.floor((done * BAR_WIDTH) / total);
            const bar = '#'.repeat(filled) + '-'.repeat(BAR_WIDTH - filled);
            const pct = `${percent(done, total)}%`.padStart(4);
            stream.write(`\r\x1b[Kseeding [${bar}] ${pct}  ${done}/${total} pets  ${rate(done, t - started)} pets/s`);
        },
        finish() {
            if (drawn)
                stream.write('\n');
        },
    };
}
export async function seedCommand(store, options, out, progress, now) {
    const { count, batchSize, status } = options;
    const started = now();
    for (let first = 1; first <= count; first += batchSize) {
        const last = Math.min(count, first + batchSize - 1);
        const batch = new Array(last - first + 1);
        for (let n = first; n <= last; n++)
            batch[n - first] = seedPet(n, status);
        await store.insertPets(batch);
        progress.update(last);
    }
    progress.finish();
    const ms = now() - started;
    out.write(`seeded ${count} pets in ${(ms / 1000).toFixed(2)}s (${rate(count, ms)} pets/s)\n`);
}
//# sourceMappingURL=seed.js.map