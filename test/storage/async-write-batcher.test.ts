// Group commit: which writes go together in one commit, and when a batch is taken.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { AsyncWriteBatcher, GATHER_LIMIT } from '../../src/storage/async-write-batcher.js'
import { storeIndependent } from '../support/stores.js'

/**
 * A batcher whose commits are recorded and end only when the test says so. Its gathers end by
 * turns alone: on a busy machine GATHER_MS may pass between two turns.
 */
function manualBatcher() {
  const batches: string[][] = []
  const pending: (() => void)[] = []
  const batcher = new AsyncWriteBatcher<string, string>(
    (items) =>
      new Promise((resolve) => {
        batches.push(items)
        pending.push(() => resolve(items.map((item) => `${item}!`)))
      }),
    60_000,
  )
  /** Ends the oldest commit in flight. */
  const endCommit = () => pending.shift()!()
  return { batcher, batches, endCommit }
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextTurn()
}

storeIndependent(() => {
  describe('AsyncWriteBatcher', () => {
    test('writes submitted in one turn go in one commit, each settling with its own result', async () => {
      const { batcher, batches, endCommit } = manualBatcher()
      const results = [batcher.submit('a'), batcher.submit('b'), batcher.submit('c')]
      await turns(3)
      assert.deepEqual(batches, [['a', 'b', 'c']])
      endCommit()
      assert.deepEqual(await Promise.all(results), ['a!', 'b!', 'c!'])
      await batcher.idle()
    })

    test('a lone write is committed once a turn has passed without another', async () => {
      const { batcher, batches, endCommit } = manualBatcher()
      const result = batcher.submit('a')
      assert.deepEqual(batches, [])
      await turns(3)
      assert.deepEqual(batches, [['a']])
      endCommit()
      assert.equal(await result, 'a!')
      await batcher.idle()
    })

    test('after a commit, writes that keep arriving turn after turn join the waiting ones', async () => {
      const { batcher, batches, endCommit } = manualBatcher()
      const results = [batcher.submit('a')]
      await turns(2)
      assert.deepEqual(batches, [['a']])
      // Waiting while the first commit is in flight.
      results.push(batcher.submit('b'))
      endCommit()
      await Promise.resolve()
      // Clients answered by that commit come back over the next turns: they join b's batch rather
      // than wait for the sync of a batch of b alone.
      await nextTurn()
      results.push(batcher.submit('c'))
      await nextTurn()
      results.push(batcher.submit('d'))
      await turns(4)
      assert.deepEqual(batches, [['a'], ['b', 'c', 'd']])
      endCommit()
      assert.deepEqual(await Promise.all(results), ['a!', 'b!', 'c!', 'd!'])
      await batcher.idle()
    })

    test('a full batch does not wait for a quiet turn', async () => {
      const { batcher, batches, endCommit } = manualBatcher()
      const items = Array.from({ length: GATHER_LIMIT }, (_, i) => `w${i}`)
      const results = items.map((item) => batcher.submit(item))
      // Arrivals go on every turn, but the batch is full: it is taken at the first turn.
      let arriving = true
      const more: Promise<string>[] = []
      void (async () => {
        while (arriving) {
          await nextTurn()
          if (arriving) more.push(batcher.submit('late'))
        }
      })()
      await turns(2)
      assert.equal(batches.length, 1)
      assert.deepEqual(batches[0], items)
      arriving = false
      endCommit()
      await Promise.all(results)
      await turns(3)
      endCommit()
      await Promise.all(more)
      await batcher.idle()
    })

    test('writes arriving on every turn are still committed, GATHER_MS after a batch began', async () => {
      const committed: number[] = []
      const batcher = new AsyncWriteBatcher<number, number>(async (items) => {
        committed.push(items.length)
        return items
      })
      const results: Promise<number>[] = []
      // One write a turn, each turn at least 0.5 ms long: 40 writes over 20 ms or more (more on a
      // busy machine), well under GATHER_LIMIT.
      let n = 0
      while (n < 40) {
        results.push(batcher.submit(n++))
        const busy = performance.now() + 0.5
        while (performance.now() < busy) {}
        await nextTurn()
      }
      assert.ok(n < GATHER_LIMIT)
      // Without the time limit the first commit would wait for the arrivals to stop.
      assert.ok(committed.length >= 2, `one batch for ${n} writes over 20 ms or more: ${committed}`)
      assert.deepEqual(await Promise.all(results), [...Array(n).keys()])
      await batcher.idle()
    })

    test('a failed commit rejects every write of its batch and none of the next', async () => {
      let fail = true
      const batcher = new AsyncWriteBatcher<string, string>(async (items) => {
        if (fail) {
          fail = false
          throw new Error('disk full')
        }
        return items
      })
      const first = [batcher.submit('a'), batcher.submit('b')]
      for (const p of first) await assert.rejects(p, /disk full/)
      assert.equal(await batcher.submit('c'), 'c')
      await batcher.idle()
    })
  })
})
