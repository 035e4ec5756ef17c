/**
 * Where the billing plugin tells who is listening that a request's charge reached the live balances:
 * auto-recharge watches for an account crossing its threshold. Listeners run synchronously on the
 * settle's turn, so they only look and queue work; one that throws never affects the charge.
 */
import type { ChargeRecord } from '../store/store';

type Listener = (charge: ChargeRecord) => void;

export class SettledCharges {
  private readonly listeners = new Set<Listener>();

  /** Adds a listener; the function returned removes it. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(charge: ChargeRecord): void {
    for (const listener of this.listeners) {
      try {
        listener(charge);
      } catch {
        // A listener's own failure is its to report; the charge is settled whatever it does.
      }
    }
  }
}
