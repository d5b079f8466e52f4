// Waiting for something a test cannot be told of (a process, a database, a breaker): polled, with
// a deadline past which the test fails naming what never happened.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) assert.fail(`never happened: ${what}`)
    await sleep(20)
  }
}
