// What the bench must undo whatever happens (processes, databases), run in the reverse order of
// registration. Its `after(fn)` is the part of node:test's TestContext that test/support helpers use.
export class Cleanup {
  private readonly fns: (() => unknown)[] = []

  after(fn: () => unknown): void {
    this.fns.push(fn)
  }

  /** Runs and forgets everything registered so far, the last first; a failure is reported, not thrown. */
  async run(log: (line: string) => void): Promise<void> {
    for (const fn of this.fns.splice(0).reverse()) {
      try {
        await fn()
      } catch (err) {
        log(`bench: clean-up: ${(err as Error).message}`)
      }
    }
  }
}
