/**
 * The simulator's operations and their seeded generator. Each operation is drawn from the seed and the
 * model's state (which holds are open), so one seed is one sequence on every book: a failure replays
 * with `npm run sim -- --seed <n> --store <name>`.
 */

/** What the upstream reports: within what the request could use, more than that, or nothing (it failed). */
type Usage = 'honest' | 'over' | 'none';
type StripeEvent = 'paid' | 'refund' | 'dispute' | 'dispute_won';

export type Op =
  | { readonly kind: 'credit'; readonly account: number; readonly amount: bigint }
  | { readonly kind: 'transfer'; readonly from: number; readonly to: number; readonly amount: bigint }
  | {
      readonly kind: 'request';
      readonly id: string;
      readonly account: number;
      readonly key: number;
      readonly text: string;
      readonly maxTokens: number;
      readonly usage: Usage;
      /** The share of `maxTokens` an honest reply used, in percent. */
      readonly outputPercent: number;
      /** Settled in the same step; otherwise its hold stays open until a `settle`. */
      readonly settleNow: boolean;
      readonly instance: number;
      /** The route that answered: 0 the first (it states its cost), 1 the failover (a cost no one knows). */
      readonly route: number;
    }
  | { readonly kind: 'settle'; readonly request: string }
  | { readonly kind: 'drain' }
  | { readonly kind: 'redeem'; readonly account: number; readonly code: number }
  | { readonly kind: 'order'; readonly order: number; readonly account: number; readonly minor: number }
  | { readonly kind: 'stripe'; readonly order: number; readonly event: StripeEvent; readonly minor: number; readonly eventId: string; readonly instance: number }
  | { readonly kind: 'tick'; readonly ms: number }
  | { readonly kind: 'write_fails'; readonly instance: number }
  | { readonly kind: 'stall'; readonly instance: number; readonly on: boolean }
  /** Redis restarted empty; `drained`: every writer had written everything first. */
  | { readonly kind: 'flush_redis'; readonly drained: boolean }
  | { readonly kind: 'restart'; readonly instance: number };

/** What a book can be put through. */
export interface Abilities {
  readonly instances: number;
  /** Its live numbers count charges not yet written, so a stalled ledger writer is no difference. */
  readonly stall: boolean;
  readonly flushRedis: boolean;
}

export const ACCOUNTS = 2;
export const KEYS_PER_ACCOUNT = 2;
export const CODES = 3;

/** mulberry32: small, fast, and the same on every Node. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  big(min: bigint, max: bigint): bigint {
    return min + BigInt(Math.floor(this.next() * Number(max - min + 1n)));
  }
}

const WORDS = ['the', 'gateway', 'holds', 'funds', 'before', 'forwarding', 'a', 'request', 'ledger', 'charge', 'settles', 'at', 'cost', 'budget', 'period'];

function latin(random: Random, chars: number): string {
  let text = '';
  while (text.length < chars) text += `${random.pick(WORDS)} `;
  return text.slice(0, chars);
}

/** CJK Unified Ideographs Extension A: three bytes each in UTF-8, and about three tokens each. */
function cjk(random: Random, chars: number): string {
  let text = '';
  for (let i = 0; i < chars; i++) text += String.fromCodePoint(random.int(0x3400, 0x4dbf));
  return text;
}

interface OrderState {
  readonly account: number;
  readonly minor: number;
  paid: boolean;
  refunded: number;
  /** The dispute's amount in cents; 0 before one. */
  disputed: number;
  won: boolean;
  readonly events: Extract<Op, { kind: 'stripe' }>[];
}

/**
 * Draws one operation at a time. `left out` names the patterns a pending rule would trip (see
 * pending.ts): they are not drawn until the rule's fix lands and the entry goes.
 */
export class OpGenerator {
  private readonly random: Random;
  private requests = 0;
  private events = 0;
  private readonly orders: OrderState[] = [];
  private readonly stalled = new Set<number>();

  constructor(
    seed: number,
    private readonly abilities: Abilities,
    private readonly leftOut: ReadonlySet<string>,
  ) {
    this.random = new Random(seed);
  }

  /** The next operation, given the holds the model has open now. */
  next(openHolds: readonly string[]): Op {
    const r = this.random;
    const roll = r.next();
    const quiet = openHolds.length === 0;
    if (roll < 0.12 && !quiet) return { kind: 'settle', request: r.pick(openHolds) };
    if (roll < 0.2) return { kind: 'drain' };
    if (roll < 0.26) return r.next() < 0.4 ? this.transfer() : { kind: 'credit', account: r.int(0, ACCOUNTS - 1), amount: r.big(500_000n, 8_000_000n) };
    if (roll < 0.29) return { kind: 'redeem', account: r.int(0, ACCOUNTS - 1), code: r.int(0, CODES - 1) };
    if (roll < 0.32) return this.order();
    if (roll < 0.4) return this.stripe() ?? this.order();
    if (roll < 0.43) return quiet ? { kind: 'tick', ms: r.pick([60_000, 3_600_000, 6 * 3_600_000, 86_400_000, 3 * 86_400_000, 9 * 86_400_000]) } : { kind: 'settle', request: r.pick(openHolds) };
    if (roll < 0.47) return this.fault(openHolds);
    return this.request();
  }

  /** Credit moved between two accounts: often more than the source has free, to meet the refusal. */
  private transfer(): Op {
    const r = this.random;
    const from = r.int(0, ACCOUNTS - 1);
    return { kind: 'transfer', from, to: (from + r.int(1, ACCOUNTS - 1)) % ACCOUNTS, amount: r.big(100_000n, 12_000_000n) };
  }

  /** What ends a run: every hold settled, every writer free to write, everything written. */
  finish(openHolds: readonly string[]): Op[] {
    const ops: Op[] = openHolds.map((request) => ({ kind: 'settle', request }) as const);
    for (const instance of this.stalled) ops.push({ kind: 'stall', instance, on: false });
    this.stalled.clear();
    ops.push({ kind: 'drain' });
    return ops;
  }

  private request(): Op {
    const r = this.random;
    this.requests += 1;
    const text = !this.leftOut.has('hold-covers') && r.chance(0.25) ? cjk(r, r.int(20, 120)) : latin(r, r.int(20, 300));
    const usage = r.pick<Usage>(['honest', 'honest', 'honest', 'honest', 'honest', 'over', 'none']);
    return {
      kind: 'request',
      id: `r${this.requests}`,
      account: r.int(0, ACCOUNTS - 1),
      key: r.int(0, KEYS_PER_ACCOUNT - 1),
      text,
      maxTokens: r.int(10, 200),
      usage,
      outputPercent: r.int(0, 100),
      settleNow: r.chance(0.7),
      instance: r.int(0, this.abilities.instances - 1),
      route: r.chance(0.2) ? 1 : 0,
    };
  }

  private order(): Op {
    const r = this.random;
    const order = { account: r.int(0, ACCOUNTS - 1), minor: r.int(1, 40) * 25, paid: false, refunded: 0, disputed: 0, won: false, events: [] };
    this.orders.push(order);
    return { kind: 'order', order: this.orders.length - 1, account: order.account, minor: order.minor };
  }

  /** A Stripe event for a known order: in any order, repeated sometimes, unless `payments-order` is pending. */
  private stripe(): Op | null {
    const r = this.random;
    if (this.orders.length === 0) return null;
    const index = r.int(0, this.orders.length - 1);
    const order = this.orders[index];
    const instance = r.int(0, this.abilities.instances - 1);
    // Stripe delivers an event again: the same id, perhaps at the other instance.
    if (order.events.length > 0 && r.chance(0.15)) return { ...r.pick(order.events), instance };
    const strict = this.leftOut.has('payments-order');
    const choices: StripeEvent[] = [];
    if (!order.paid) choices.push('paid');
    if ((!strict || (order.paid && order.disputed === 0)) && order.refunded < order.minor) choices.push('refund');
    if ((!strict || (order.paid && order.refunded === 0)) && order.disputed === 0) choices.push('dispute');
    if (!strict && order.disputed > 0 && !order.won) choices.push('dispute_won');
    if (choices.length === 0) return null;
    const event = r.pick(choices);
    let minor = 0;
    if (event === 'paid') order.paid = true;
    if (event === 'refund') order.refunded = minor = r.chance(0.4) ? order.minor : r.int(order.refunded + 1, order.minor);
    if (event === 'dispute') order.disputed = minor = r.chance(0.6) ? order.minor : r.int(1, order.minor);
    if (event === 'dispute_won') {
      order.won = true;
      minor = order.disputed;
    }
    this.events += 1;
    const op = { kind: 'stripe', order: index, event, minor, eventId: `evt_${this.events}`, instance } as const;
    order.events.push(op);
    return op;
  }

  private fault(openHolds: readonly string[]): Op {
    const r = this.random;
    const instance = r.int(0, this.abilities.instances - 1);
    const roll = r.next();
    if (roll < 0.3) return { kind: 'write_fails', instance };
    if (roll < 0.55 && this.abilities.stall) {
      const on = !this.stalled.has(instance);
      if (on) this.stalled.add(instance);
      else this.stalled.delete(instance);
      return { kind: 'stall', instance, on };
    }
    if (openHolds.length > 0) return { kind: 'settle', request: r.pick(openHolds) };
    if (roll < 0.8 && this.abilities.flushRedis) {
      // Pending `redis-reseed`: only a Redis whose instances have written everything is lost.
      const drained = this.leftOut.has('redis-reseed');
      return drained && this.stalled.size > 0 ? { kind: 'drain' } : { kind: 'flush_redis', drained };
    }
    if (this.stalled.has(instance)) return { kind: 'stall', instance, on: (this.stalled.delete(instance), false) };
    return { kind: 'restart', instance };
  }
}
