// A circuit breaker in front of a store that may hang or go away: after a failure the store is
// left alone for a while, and one probe at a time, off any request, asks whether it is back.

export interface BreakerOptions {
  /** How long the store is left alone after a failure before a probe asks again. */
  openMs: number
  /** Resolves when the store answers within its bound, rejects otherwise. */
  probe: () => Promise<unknown>
  /** Hears once of each outage: when the breaker opens, and when it closes again. */
  onOpen: (err: unknown) => void
  onClose: () => void
  now?: () => number
}

export class Breaker {
  private open = false
  private probing = false
  private nextProbeAt = 0
  private readonly now: () => number

  constructor(private readonly opts: BreakerOptions) {
    this.now = opts.now ?? Date.now
  }

  /**
   * Whether the store must be left alone now. When a probe is due it is sent, in the background:
   * the caller goes elsewhere meanwhile and the store is used again once the probe has answered.
   */
  isOpen(): boolean {
    if (!this.open) return false
    if (!this.probing && this.now() >= this.nextProbeAt) this.sendProbe()
    return true
  }

  /** A call to the store failed: leave it alone for openMs. */
  trip(err: unknown): void {
    this.nextProbeAt = this.now() + this.opts.openMs
    if (this.open) return
    this.open = true
    this.opts.onOpen(err)
  }

  /** Opens without telling anyone, e.g. when the outage was already reported at start. */
  startOpen(): void {
    this.open = true
    this.nextProbeAt = this.now()
  }

  private sendProbe(): void {
    this.probing = true
    this.opts.probe().then(
      () => {
        this.probing = false
        if (!this.open) return
        this.open = false
        this.opts.onClose()
      },
      () => {
        this.probing = false
        this.nextProbeAt = this.now() + this.opts.openMs
      },
    )
  }
}
