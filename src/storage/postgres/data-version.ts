// The data_version row (migration 002), read once for every caller waiting together.
import { type Deadline, earliest } from '../deadline.js'
import type { DataVersion } from '../store.js'
import type { PooledStatements } from './statements.js'

interface Waiter {
  resolve: (version: DataVersion) => void
  reject: (e: unknown) => void
  deadline: Deadline | undefined
}

/**
 * One read is in flight at a time; callers arriving meanwhile share the next, sent after all of
 * them asked, so it sees every commit acknowledged before any of them did. Each read is bounded by
 * the earliest deadline of those sharing it, so no caller waits past its own.
 */
export class SharedVersionRead {
  private waiters: Waiter[] = []
  private reading = false

  constructor(private readonly db: PooledStatements) {}

  read(deadline?: Deadline): Promise<DataVersion> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject, deadline })
      if (!this.reading) void this.readForWaiters()
    })
  }

  private async readForWaiters(): Promise<void> {
    this.reading = true
    while (this.waiters.length > 0) {
      const waiting = this.waiters
      this.waiters = []
      try {
        const [row] = await this.db.query<{ pets: bigint; api_keys: bigint }>(
          'data-version',
          'SELECT pets, api_keys FROM data_version',
          [],
          earliest(waiting.map((w) => w.deadline)),
        )
        const version = { pets: Number(row!.pets), keys: Number(row!.api_keys) }
        for (const w of waiting) w.resolve(version)
      } catch (err) {
        for (const w of waiting) w.reject(err)
      }
    }
    this.reading = false
  }
}
