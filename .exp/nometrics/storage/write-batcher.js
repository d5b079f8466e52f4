/**
 * Group commit: writes submitted during one turn of the event loop are committed together, in one
 * transaction and one sync, and each caller's promise settles only after that commit. Under load
 * this turns N fsyncs into one without weakening what a resolved promise means.
 */
export class WriteBatcher {
    commit;
    queue = [];
    scheduled = false;
    listeners = [];
    constructor(commit) {
        this.commit = commit;
    }
    /** Writes waiting for the next commit. */
    get queued() {
        return this.queue.length;
    }
    /** Calls the listener with the size of each batch committed from now on (for metrics). */
    onCommit(listener) {
        this.listeners.push(listener);
    }
    submit(item) {
        return new Promise((resolve, reject) => {
            this.queue.push({ item, resolve, reject });
            if (!this.scheduled) {
                this.scheduled = true;
                setImmediate(this.flush);
            }
        });
    }
    /** Commits whatever is queued now; also called on close so that nothing queued is dropped. */
    flush = () => {
        this.scheduled = false;
        const batch = this.queue;
        if (batch.length === 0)
            return;
        this.queue = [];
        let results;
        try {
            results = this.commit(batch.map((b) => b.item));
        }
        catch (err) {
            for (const b of batch)
                b.reject(err);
            return;
        }
        for (const [i, b] of batch.entries())
            b.resolve(results[i]);
        for (const listener of this.listeners)
            listener(batch.length);
    };
}
//# sourceMappingURL=write-batcher.js.map