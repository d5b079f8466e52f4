/**
 * Group commit for a store whose commits are asynchronous (a database over the network): writes
 * submitted while a commit is in flight wait and go together in the next one, so under load one
 * transaction carries many writes, and each promise settles only when its own commit has.
 */
export class AsyncWriteBatcher {
    commit;
    queue = [];
    committing = null;
    listeners = [];
    constructor(commit) {
        this.commit = commit;
    }
    get queued() {
        return this.queue.length;
    }
    onCommit(listener) {
        this.listeners.push(listener);
    }
    submit(item) {
        return new Promise((resolve, reject) => {
            this.queue.push({ item, resolve, reject });
            this.committing ??= this.drain();
        });
    }
    /** Resolves when nothing is queued or in flight; for close. */
    async idle() {
        while (this.committing)
            await this.committing;
    }
    async drain() {
        // Let the requests that arrive in this turn of the event loop join the first batch.
        await new Promise((resolve) => setImmediate(resolve));
        while (this.queue.length > 0) {
            const batch = this.queue;
            this.queue = [];
            try {
                const results = await this.commit(batch.map((b) => b.item));
                for (const [i, b] of batch.entries())
                    b.resolve(results[i]);
                for (const listener of this.listeners)
                    listener(batch.length);
            }
            catch (err) {
                for (const b of batch)
                    b.reject(err);
            }
        }
        this.committing = null;
    }
}
//# sourceMappingURL=async-write-batcher.js.map