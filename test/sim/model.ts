/**
 * The money as the rules state it, in memory, with nothing of the books' machinery: no queues, no
 * caches, no Redis. Every book must show what this shows after every step of the simulator.
 *
 *   balance   = credits − charges − debits   (debits: what payments took back)
 *   available = balance − held
 *
 * A request is admitted when, in this order, the balance, its key's spend limit, its key's budget, its
 * member's budget (a member's key in an organisation: what the organisation lets that member spend
 * through all of their keys) and its account's budget each leave room for its hold; the first that does not is the 402 reason, with
 * what it leaves (never below 0). A
 * charge is what the upstream reported, in full, past the hold too. A card order adds its amount less
 * what refunds and disputes took, whatever order Stripe's events arrive in; together they never take
 * more than the order; a dispute won gives back what it took. A redemption code credits once.
 *
 *   upstream cost = the sum of what the charges of known cost cost upstream
 *   margin        = what those same charges charged − their upstream cost
 *
 * A charge whose route states no cost records none: it is counted apart, in neither sum.
 */

export type Scope = 'account' | 'member' | 'key';

/** A budget as one hold checks it: the period it falls in now. */
export interface ModelBudget {
  readonly scope: Scope;
  readonly id: string;
  readonly amount: bigint;
  readonly start: number;
  readonly end: number;
}

export type Admission =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'balance' | 'key_spend_limit'; readonly available: bigint }
  | { readonly ok: false; readonly reason: 'budget'; readonly scope: Scope; readonly available: bigint };

interface Charge {
  readonly accountId: string;
  readonly keyId: string;
  /** The member whose key made it (an opaque id, the member budget's); null for an account's own key. */
  readonly member: string | null;
  readonly cost: bigint;
  /** What it cost the operator upstream; null when its route's cost is unknown. */
  readonly upstreamCost: bigint | null;
  readonly at: number;
}

/** An account's charges as the operator reads them: what they cost upstream, and the margin on them. */
export interface UpstreamSums {
  readonly cost: bigint;
  readonly margin: bigint;
  /** Charges of unknown upstream cost, in neither figure. */
  readonly uncosted: number;
}

interface OpenHold {
  readonly accountId: string;
  readonly keyId: string;
  readonly member: string | null;
  readonly amount: bigint;
}

interface Order {
  readonly accountId: string;
  readonly minor: number;
  /** What the order credits when paid in full, in nano-units. */
  readonly credit: bigint;
  paid: boolean;
  /** Cumulative, as Stripe reports it. */
  refundedMinor: number;
  disputedMinor: number;
  disputeWon: boolean;
}

/** A rule the model holds every book to that is not a figure to compare: broken, it says how. */
export interface Breach {
  readonly rule: string;
  readonly detail: string;
}

export class MoneyModel {
  private readonly credits = new Map<string, bigint>();
  private readonly charges: Charge[] = [];
  private readonly holds = new Map<string, OpenHold>();
  private readonly limits = new Map<string, bigint | null>();
  /** Each member's key's member (`addKey`). */
  private readonly members = new Map<string, string>();
  private readonly orders = new Map<string, Order>();
  private readonly codes = new Map<string, { amount: bigint; used: boolean }>();
  private readonly seenEvents = new Set<string>();
  /** Accounts whose balance only honest requests moved down: such a balance never goes below zero. */
  private readonly dented = new Set<string>();

  addAccount(accountId: string): void {
    this.credits.set(accountId, 0n);
  }

  /** `member`: the key is a member's in an organisation, and spends in that member's budget. */
  addKey(keyId: string, spendLimit: bigint | null, member: string | null = null): void {
    this.limits.set(keyId, spendLimit);
    if (member !== null) this.members.set(keyId, member);
  }

  addCode(code: string, amount: bigint): void {
    this.codes.set(code, { amount, used: false });
  }

  credit(accountId: string, amount: bigint): void {
    this.credits.set(accountId, this.credits.get(accountId)! + amount);
  }

  /**
   * Credit moved from one account to another: refused, moving nothing, when the source's balance
   * less its holds is less than the amount (the transfer rule); never leaves the source below zero.
   */
  transfer(fromId: string, toId: string, amount: bigint): { ok: true } | { ok: false; available: bigint } {
    const available = this.balance(fromId) - this.held('account', fromId);
    if (available < amount) return { ok: false, available: atLeastZero(available) };
    this.credits.set(fromId, this.credits.get(fromId)! - amount);
    this.credits.set(toId, this.credits.get(toId)! + amount);
    return { ok: true };
  }

  /** `budgets` in any order: the key's budget is checked first, then the member's, then the account's. */
  hold(requestId: string, accountId: string, keyId: string, amount: bigint, budgets: readonly ModelBudget[]): Admission {
    const available = this.balance(accountId) - this.held('account', accountId);
    if (available < amount) return { ok: false, reason: 'balance', available: atLeastZero(available) };
    const limit = this.limits.get(keyId) ?? null;
    if (limit !== null) {
      const left = limit - this.spent('key', keyId) - this.held('key', keyId);
      if (left < amount) return { ok: false, reason: 'key_spend_limit', available: atLeastZero(left) };
    }
    for (const scope of ['key', 'member', 'account'] as const) {
      for (const budget of budgets.filter((candidate) => candidate.scope === scope)) {
        const left = budget.amount - this.periodSpend(budget) - this.held(scope, budget.id);
        if (left < amount) return { ok: false, reason: 'budget', scope, available: atLeastZero(left) };
      }
    }
    this.holds.set(requestId, { accountId, keyId, member: this.members.get(keyId) ?? null, amount });
    return { ok: true };
  }

  /**
   * The request ended: its hold goes and the upstream's cost is charged in full. `honest`: the upstream
   * reported no more than the request could use (its own text, at most its output limit), so the hold
   * had to cover it.
   */
  settle(requestId: string, cost: bigint, upstreamCost: bigint | null, at: number, honest: boolean): Breach[] {
    const hold = this.holds.get(requestId);
    if (hold === undefined) throw new Error(`the model holds nothing for ${requestId}`);
    this.holds.delete(requestId);
    this.charges.push({ accountId: hold.accountId, keyId: hold.keyId, member: hold.member, cost, upstreamCost, at });
    const breaches: Breach[] = [];
    if (!honest) {
      this.dented.add(hold.accountId);
      return breaches;
    }
    if (cost > hold.amount) breaches.push({ rule: 'hold-covers', detail: `request ${requestId} cost ${cost} nano-units, more than its hold of ${hold.amount}` });
    if (!this.dented.has(hold.accountId) && this.balance(hold.accountId) < 0n) {
      breaches.push({ rule: 'hold-covers', detail: `account ${hold.accountId} went below zero (${this.balance(hold.accountId)}) on honest requests alone` });
    }
    const limit = this.limits.get(hold.keyId) ?? null;
    if (!this.dented.has(hold.accountId) && limit !== null && this.spent('key', hold.keyId) > limit) {
      breaches.push({ rule: 'hold-covers', detail: `key ${hold.keyId} spent ${this.spent('key', hold.keyId)}, past its limit of ${limit}` });
    }
    return breaches;
  }

  openHolds(): string[] {
    return [...this.holds.keys()];
  }

  redeem(code: string): { ok: true; amount: bigint } | { ok: false; reason: 'used' } {
    const entry = this.codes.get(code)!;
    if (entry.used) return { ok: false, reason: 'used' };
    entry.used = true;
    return { ok: true, amount: entry.amount };
  }

  addOrder(orderId: string, accountId: string, minor: number, credit: bigint): void {
    this.orders.set(orderId, { accountId, minor, credit, paid: false, refundedMinor: 0, disputedMinor: 0, disputeWon: false });
  }

  /** One Stripe event; a repeated event id changes nothing. */
  payment(eventId: string, orderId: string, event: { kind: 'paid' } | { kind: 'refund'; refundedMinor: number } | { kind: 'dispute'; minor: number } | { kind: 'dispute_won' }): void {
    if (this.seenEvents.has(eventId)) return;
    this.seenEvents.add(eventId);
    const order = this.orders.get(orderId)!;
    // What a refund or a dispute takes may leave the balance below zero: what was spent stays spent.
    if (event.kind !== 'paid') this.dented.add(order.accountId);
    switch (event.kind) {
      case 'paid':
        order.paid = true;
        break;
      case 'refund':
        order.refundedMinor = Math.max(order.refundedMinor, event.refundedMinor);
        break;
      case 'dispute':
        order.disputedMinor = event.minor;
        break;
      case 'dispute_won':
        order.disputeWon = true;
        break;
    }
  }

  balance(accountId: string): bigint {
    let balance = this.credits.get(accountId)!;
    for (const order of this.orders.values()) if (order.accountId === accountId) balance += orderNet(order);
    return balance - this.spent('account', accountId);
  }

  held(scope: Scope, id: string): bigint {
    let held = 0n;
    for (const hold of this.holds.values()) if (ownerOf(hold, scope) === id) held += hold.amount;
    return held;
  }

  /** Everything charged to the account or key, ever. */
  spent(scope: Scope, id: string): bigint {
    return this.sum((charge) => ownerOf(charge, scope) === id);
  }

  periodSpend(budget: Pick<ModelBudget, 'scope' | 'id' | 'start' | 'end'>): bigint {
    return this.sum((charge) => ownerOf(charge, budget.scope) === budget.id && charge.at >= budget.start && charge.at < budget.end);
  }

  chargeCount(accountId: string): number {
    return this.charges.filter((charge) => charge.accountId === accountId).length;
  }

  upstream(accountId: string): UpstreamSums {
    let cost = 0n;
    let charged = 0n;
    let uncosted = 0;
    for (const charge of this.charges) {
      if (charge.accountId !== accountId) continue;
      if (charge.upstreamCost === null) {
        uncosted += 1;
        continue;
      }
      cost += charge.upstreamCost;
      charged += charge.cost;
    }
    return { cost, margin: charged - cost, uncosted };
  }

  /** Credits less debits: what the ledger's funds side adds up to. */
  funds(accountId: string): bigint {
    return this.balance(accountId) + this.spent('account', accountId);
  }

  private sum(counts: (charge: Charge) => boolean): bigint {
    let sum = 0n;
    for (const charge of this.charges) if (counts(charge)) sum += charge.cost;
    return sum;
  }
}

/**
 * What a card order leaves in the balance: nothing until paid, then its credit less what refunds and
 * an unresolved (or lost) dispute took, together never more than the order.
 */
function orderNet(order: Order): bigint {
  if (!order.paid) return 0n;
  const takenMinor = Math.min(order.minor, order.refundedMinor + (order.disputeWon ? 0 : order.disputedMinor));
  return order.credit - (order.credit * BigInt(takenMinor)) / BigInt(order.minor);
}

/** Whose spend in `scope` a charge or hold is: its account's, its key's, or its member's (none for an account's own key). */
function ownerOf(made: { readonly accountId: string; readonly keyId: string; readonly member: string | null }, scope: Scope): string | null {
  return scope === 'account' ? made.accountId : scope === 'key' ? made.keyId : made.member;
}

function atLeastZero(value: bigint): bigint {
  return value < 0n ? 0n : value;
}
