// How many idempotency records one API key may keep, and when an adapter counts them. The rule is
// the same for every adapter; each adapter only counts and deletes.

/** Records kept per API key unless configured (PETSTORE_IDEMPOTENCY_KEYS_PER_API_KEY). */
export const DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY = 10_000

/**
 * At most `cap` records per API key, its oldest completed ones going first. Counting and sorting a
 * key's records is costly: a key is counted every 1% of the cap in claims, and trimmed 5% below it.
 */
export class IdempotencyCap {
  /** New claims between two counts of a key, at most. */
  private readonly interval: number
  /** How far below the cap a trim goes. */
  private readonly depth: number
  /** New claims each API key may still make before its records are counted again. */
  private readonly room = new Map<string, number>()

  constructor(readonly cap: number) {
    if (!Number.isInteger(cap) || cap < 1)
      throw new RangeError('the cap must be a positive integer')
    this.interval = Math.floor(cap / 100)
    this.depth = Math.floor(cap / 20)
  }

  /** Called for each claim taken; true when the adapter is to count the key's records now. */
  claimed(apiKeyId: string): boolean {
    const room = this.room.get(apiKeyId) ?? 0
    if (room > 0) {
      this.room.set(apiKeyId, room - 1)
      return false
    }
    // Claims taken while this count runs (concurrent transactions) wait for its result rather
    // than count and trim the same records again.
    this.room.set(apiKeyId, this.interval)
    return true
  }

  /** How many of the key's oldest completed records to delete when it has `count`. */
  excess(count: number): number {
    return count > this.cap ? count - (this.cap - this.depth) : 0
  }

  /** The key was counted (and trimmed) and has `remaining` records, besides claims since. */
  counted(apiKeyId: string, remaining: number): void {
    const since = this.interval - (this.room.get(apiKeyId) ?? 0)
    this.room.set(apiKeyId, Math.max(0, Math.min(this.interval, this.cap - remaining) - since))
  }
}
