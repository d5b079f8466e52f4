// Answers as sent (serialized JSON, and a list page's next cursor), kept while the store's data
// version holds: a page or a pet is a function of its parameters and the data, and any commit, by
// any process, moves the version.
import { FifoMap } from 'toad-cache'

/** The JSON body as the route's serializer wrote it, and a list page's next cursor (else null). */
export type CachedRead = { body: string; nextCursor: string | null }

/** Pages (~8 KB at 100 pets) and pets (~100 bytes) kept at most; past it the oldest go. */
export const MAX_CACHED_PAGES = 1000
export const MAX_CACHED_PETS = 10_000

export class ReadCache {
  private readonly entries: FifoMap<CachedRead & { version: number }>

  constructor(capacity: number) {
    this.entries = new FifoMap(capacity)
  }

  /** The read kept at `version`, else the one `read` makes, kept. Without a version nothing is
   * kept: nothing read then can be vouched for. */
  async get(
    key: string,
    version: number | undefined,
    read: () => Promise<CachedRead>,
  ): Promise<CachedRead> {
    if (version === undefined) return read()
    const entry = this.entries.get(key)
    if (entry?.version === version) return entry
    const fresh = await read()
    this.entries.delete(key) // a replaced entry is the newest; FifoMap would keep its place
    this.entries.set(key, { version, ...fresh })
    return fresh
  }
}
