// Answers as sent (serialized JSON, and a list page's next cursor), kept while the store's data
// version holds: a page or a pet is a function of its parameters and the data, and any commit, by
// any process, moves the version.
import { FifoMap } from 'toad-cache'

export interface CachedRead {
  /** The JSON body, exactly as the route's response serializer wrote it. */
  body: string
  /** A list page's next cursor; null on a last page and for a pet. */
  nextCursor: string | null
}

/** Pages kept at most (a page of 100 pets is ~8 KB), and pets (~100 bytes each); past it the
 * oldest entry makes room. */
export const MAX_CACHED_PAGES = 1000
export const MAX_CACHED_PETS = 10_000

export class ReadCache {
  private readonly entries: FifoMap<CachedRead & { version: number }>

  constructor(capacity = MAX_CACHED_PAGES) {
    this.entries = new FifoMap(capacity)
  }

  /** A list page's key. Absent and empty parameters differ: `cursor=` is an error, not page 1. */
  static pageKey(limit: number, status: string | undefined, cursor: string | undefined): string {
    return `${limit}|${status === undefined ? '-' : `=${status}`}|${cursor === undefined ? '-' : `=${cursor}`}`
  }

  /** A pet's key. */
  static petKey(id: bigint): string {
    return String(id)
  }

  /** Undefined without a version: nothing read then can be vouched for. */
  get(key: string, version: number | undefined): CachedRead | undefined {
    if (version === undefined) return undefined
    const entry = this.entries.get(key)
    return entry?.version === version ? entry : undefined
  }

  set(key: string, version: number | undefined, read: CachedRead): void {
    if (version === undefined) return
    this.entries.delete(key) // a replaced entry is the newest; FifoMap would keep its place
    this.entries.set(key, { version, body: read.body, nextCursor: read.nextCursor })
  }

  get size(): number {
    return this.entries.size
  }
}
