// List pages as sent (serialized JSON and next cursor), kept while the catalogue is unchanged.
//
// A page is a pure function of (limit, status, cursor) and of the data, so a page serialized once
// can be sent again for as long as the store's dataVersion has not moved: any commit, by this
// process or any other, moves it, and the next request for the page reads the database again.
// This takes a list request from ~25 µs of SQLite and serialization to a map lookup.
/** Pages kept at most (a page of 100 pets is ~8 KB); the oldest entry makes room for a new one. */
export const MAX_CACHED_PAGES = 1000;
export class PageCache {
    pages = new Map();
    /** Absent and empty parameters make different keys: `cursor=` is an error, not the first page. */
    static key(limit, status, cursor) {
        return `${limit}|${status === undefined ? '-' : `=${status}`}|${cursor === undefined ? '-' : `=${cursor}`}`;
    }
    get(key, version) {
        const entry = this.pages.get(key);
        return entry !== undefined && entry.version === version ? entry : undefined;
    }
    set(key, version, page) {
        if (!this.pages.delete(key) && this.pages.size >= MAX_CACHED_PAGES) {
            this.pages.delete(this.pages.keys().next().value);
        }
        this.pages.set(key, { version, body: page.body, nextCursor: page.nextCursor });
    }
    get size() {
        return this.pages.size;
    }
}
//# sourceMappingURL=page-cache.js.map