// Answers as sent (serialized JSON, and a list page's next cursor), kept while the store's data
// version holds: a page or a pet is a function of its parameters and the data, and any commit, by
// any process, moves the version.

export interface CachedRead {
  /** The JSON body, exactly as the route's response serializer wrote it. */
  body: string
  /** A list page's next cursor; null on a last page and for a pet. */
  nextCursor: string | null
}

interface Entry extends CachedRead {
  version: number
}

/** Pages kept at most (a page of 100 pets is ~8 KB), and pets (~100 bytes each); past it the
 * oldest entry makes room. */
export const MAX_CACHED_PAGES = 1000
export const MAX_CACHED_PETS = 10_000

export class ReadCache {
  private readonly entries = new Map<string, Entry>()

  constructor(private readonly capacity = MAX_CACHED_PAGES) {}

  /** A list page's key. Absent and empty parameters differ: `cursor=` is an error, not page 1. */
  static pageKey(limit: number, status: string | undefined, cursor: string | undefined): string {
    return `${limit}|${status === undefined ? '-' : `=${status}`}|${cursor === undefined ? '-' : `=${cursor}`}`
  }

  /** A pet's key. */
  static petKey(id: bigint): string {
    return String(id)
  }

  get(key: string, version: number): CachedRead | undefined {
    const entry = this.entries.get(key)
    return entry !== undefined && entry.version === version ? entry : undefined
  }

  set(key: string, version: number, read: CachedRead): void {
    if (!this.entries.delete(key) && this.entries.size >= this.capacity) {
      this.entries.delete(this.entries.keys().next().value!)
    }
    this.entries.set(key, { version, body: read.body, nextCursor: read.nextCursor })
  }

  get size(): number {
    return this.entries.size
  }
}
