/**
 * A monthly statement's arithmetic: how one account's ledger for a month becomes the figures a
 * statement shows, and the identity they must satisfy (opening + movements = closing, the closing
 * equal to the ledger to the nano-unit). Pure: the store sums, this decides what the sums mean.
 */
import type { CreditKind, DebitKind } from '../store/payments';

/** The lines of a statement's movements, in the order a statement shows them. */
export const MOVEMENT_LINES = [
  { id: 'card_payments', label: 'Card payments', sign: 1 },
  { id: 'redemption_codes', label: 'Redemption codes', sign: 1 },
  { id: 'admin_credits', label: 'Credits by the operator', sign: 1 },
  { id: 'transfers_in', label: 'Transfers in', sign: 1 },
  { id: 'charges', label: 'Usage charges', sign: -1 },
  { id: 'refunds', label: 'Card refunds', sign: -1 },
  { id: 'disputes', label: 'Card disputes', sign: -1 },
  { id: 'disputes_won', label: 'Disputes won (given back)', sign: 1 },
  { id: 'adjustments', label: 'Adjustments by the operator', sign: -1 },
  { id: 'transfers_out', label: 'Transfers out', sign: -1 },
] as const;

export type MovementLine = (typeof MOVEMENT_LINES)[number]['id'];

/**
 * The line each kind of credit lands on. A new credit kind does not compile until it has one, so no
 * ledger entry can be left off a statement.
 */
const CREDIT_LINE = {
  topup: 'card_payments',
  redemption: 'redemption_codes',
  admin: 'admin_credits',
  dispute_won: 'disputes_won',
  transfer: 'transfers_in',
} as const satisfies Record<CreditKind, MovementLine>;

/** The line each kind of debit lands on (see CREDIT_LINE). */
const DEBIT_LINE = {
  refund: 'refunds',
  dispute: 'disputes',
  adjustment: 'adjustments',
  transfer: 'transfers_out',
} as const satisfies Record<DebitKind, MovementLine>;

/** One kind's entries in the period: their sum and how many there were. */
export interface KindSum {
  readonly kind: string;
  readonly amount: bigint;
  readonly entries: number;
}

/** Charges summed by one grouping (a model, a key or member). */
export interface ChargeGroup {
  /** The model, or the key's (member's) id. */
  readonly id: string;
  /** What a person reads: the model again, or the key's (member's) name; null when it has none. */
  readonly name: string | null;
  readonly requests: number;
  readonly amount: bigint;
}

/** One account's ledger for a period [start, end), as the store sums it. */
export interface PeriodLedger {
  /** Credits − charges − debits dated before the period: the balance the period opened at, by the ledger now. */
  readonly before: bigint;
  readonly credits: readonly KindSum[];
  readonly debits: readonly KindSum[];
  readonly chargesByModel: readonly ChargeGroup[];
  /** The same charges by who spent them: the organisation's member whose key made it, or the account itself. */
  readonly chargesByPayer: readonly ChargeGroup[];
}

/** A statement's figures; every amount in nano-units. */
export interface StatementFigures {
  /** The previous statement's closing balance, or for an account's first statement the ledger's balance at the start. */
  readonly opening: bigint;
  /**
   * Entries dated before the period that reached the ledger after the previous statement was issued (a
   * charge replayed late from an instance's outbox): a correction shown here, since an issued
   * statement never changes. 0 on a first statement.
   */
  readonly earlier: bigint;
  readonly movements: Readonly<Record<MovementLine, bigint>>;
  readonly requests: number;
  readonly chargesByModel: readonly ChargeGroup[];
  readonly chargesByPayer: readonly ChargeGroup[];
  readonly closing: bigint;
}

/** A ledger that does not add up as a statement must; never issued. */
export class StatementMismatchError extends Error {}

function sumOf(groups: readonly ChargeGroup[]): bigint {
  return groups.reduce((sum, group) => sum + group.amount, 0n);
}

function place(movements: Record<MovementLine, bigint>, lines: Readonly<Record<string, MovementLine>>, sums: readonly KindSum[], table: string): void {
  for (const sum of sums) {
    const line = Object.hasOwn(lines, sum.kind) ? lines[sum.kind] : undefined;
    if (line === undefined) throw new StatementMismatchError(`${table} of kind "${sum.kind}" have no statement line`);
    movements[line] += sum.amount;
  }
}

/** Opening + each movement with its sign (+ earlier entries). */
export function closingOf(opening: bigint, earlier: bigint, movements: Readonly<Record<MovementLine, bigint>>): bigint {
  return MOVEMENT_LINES.reduce((sum, line) => sum + BigInt(line.sign) * movements[line.id], opening + earlier);
}

/** The ledger's own balance at the period's end: what the period opened at plus every entry in it. */
export function ledgerClosing(ledger: PeriodLedger): bigint {
  const credits = ledger.credits.reduce((sum, entry) => sum + entry.amount, 0n);
  const debits = ledger.debits.reduce((sum, entry) => sum + entry.amount, 0n);
  return ledger.before + credits - debits - sumOf(ledger.chargesByModel);
}

/**
 * The figures of a statement of `ledger`, following the previous statement's closing when there is one.
 * Throws StatementMismatchError when the sums do not add up (a kind of entry with no line, or the two
 * groupings of the charges disagreeing), so a statement that differs from the ledger is never issued.
 */
export function statementFigures(ledger: PeriodLedger, previousClosing: bigint | null): StatementFigures {
  const movements = Object.fromEntries(MOVEMENT_LINES.map((line) => [line.id, 0n])) as Record<MovementLine, bigint>;
  place(movements, CREDIT_LINE, ledger.credits, 'credits');
  place(movements, DEBIT_LINE, ledger.debits, 'debits');
  const charged = sumOf(ledger.chargesByModel);
  if (sumOf(ledger.chargesByPayer) !== charged) throw new StatementMismatchError('charges by model and by member do not sum to the same amount');
  movements.charges = charged;
  const opening = previousClosing ?? ledger.before;
  const earlier = ledger.before - opening;
  const closing = closingOf(opening, earlier, movements);
  if (closing !== ledgerClosing(ledger)) throw new StatementMismatchError(`the statement closes at ${closing}, the ledger at ${ledgerClosing(ledger)}`);
  const requests = ledger.chargesByModel.reduce((sum, group) => sum + group.requests, 0);
  return { opening, earlier, movements, requests, chargesByModel: ledger.chargesByModel, chargesByPayer: ledger.chargesByPayer, closing };
}
