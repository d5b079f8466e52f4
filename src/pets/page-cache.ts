// List pages as sent (serialized JSON and next cursor), kept while the catalogue is unchanged.
//
// A page is a pure function of (limit, status, cursor) and of the data, so a page serialized once
// can be sent again for as long as the store's dataVersion has not moved: any commit, by this
// process or any other, moves it, and the next request for the page reads the database again.
// This turns a list request's SQLite query and serialization into a map lookup
// (docs/performance.md).

export interface CachedPage {
  /** The JSON array of pets, exactly as the route's response serializer wrote it. */
  body: string
  nextCursor: string | null
}

interface Entry extends CachedPage {
  version: number
}

/** Pages kept at most (a page of 100 pets is ~8 KB); the oldest entry makes room for a new one. */
export const MAX_CACHED_PAGES = 1000

export class PageCache {
  private readonly pages = new Map<string, Entry>()

  /** Absent and empty parameters make different keys: `cursor=` is an error, not the first page. */
  static key(limit: number, status: string | undefined, cursor: string | undefined): string {
    return `${limit}|${status === undefined ? '-' : `=${status}`}|${cursor === undefined ? '-' : `=${cursor}`}`
  }

  get(key: string, version: number): CachedPage | undefined {
    const entry = this.pages.get(key)
    return entry !== undefined && entry.version === version ? entry : undefined
  }

  set(key: string, version: number, page: CachedPage): void {
    if (!this.pages.delete(key) && this.pages.size >= MAX_CACHED_PAGES) {
      this.pages.delete(this.pages.keys().next().value!)
    }
    this.pages.set(key, { version, body: page.body, nextCursor: page.nextCursor })
  }

  get size(): number {
    return this.pages.size
  }
}
