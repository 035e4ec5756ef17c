/**
 * A statement as issued: the JSON document frozen in its row. Everything a rendering shows is in it
 * (the figures, the account's name, the issuer's details, the currency at the time), so a statement
 * reads the same years later whatever changed since. Amounts are exact decimal units, as the ledger
 * keeps them.
 */
import { formatUnits, unitsToNano } from '../billing/money';
import { MOVEMENT_LINES, statementFigures, type ChargeGroup, type MovementLine, type PeriodLedger } from '../money/statement';
import { documentHash, type StoredStatement } from '../store/statements';
import type { StatementMonth } from './month';

/** Who issues statements (`plugins.billing.statements`). */
interface Issuer {
  readonly name: string;
  readonly address: readonly string[];
  readonly tax_id: string;
  readonly footer: string;
}

export interface StatementDocument {
  readonly version: 1;
  readonly number: string;
  /** The statement the opening balance follows from; null on an account's first. */
  readonly previous_number: string | null;
  readonly issued_at: string;
  readonly period: { readonly month: string; readonly start: string; readonly end: string };
  readonly account: { readonly id: string; readonly name: string };
  readonly issuer: Issuer;
  /** ISO 4217, upper case. */
  readonly currency: string;
  readonly opening: string;
  /** Entries dated before the period that reached the ledger after the previous statement was issued. */
  readonly earlier_entries: string;
  readonly lines: readonly { readonly id: MovementLine; readonly label: string; readonly sign: 1 | -1; readonly amount: string }[];
  readonly closing: string;
  readonly charges: {
    readonly requests: number;
    readonly by_model: readonly { readonly model: string; readonly requests: number; readonly amount: string }[];
    /** What `by_payer` groups by: the member who spent each charge (an organisation's member, or the account itself). */
    readonly payer_kind: 'member';
    readonly by_payer: readonly { readonly id: string; readonly name: string | null; readonly requests: number; readonly amount: string }[];
  };
}

/** What issuing one statement knows besides the ledger. */
export interface StatementContext {
  readonly account: { readonly id: string; readonly name: string };
  readonly month: StatementMonth;
  readonly issuer: Issuer;
  readonly numberPrefix: string;
  readonly currency: string;
  readonly issuedAt: Date;
}

/** An issued statement whose row no longer matches its hash: refused rather than shown. */
class StatementIntegrityError extends Error {}

/** `TG-2026-000123`. */
function statementNumber(prefix: string, year: number, sequence: number): string {
  return `${prefix}-${year}-${String(sequence).padStart(6, '0')}`;
}

/** The document of a stored statement, after checking it is what was issued. */
export function readDocument(stored: StoredStatement): StatementDocument {
  if (documentHash(stored.document) !== stored.hash) throw new StatementIntegrityError(`statement ${stored.number} does not match its hash`);
  return JSON.parse(stored.document) as StatementDocument;
}

const groupView = (group: ChargeGroup) => ({ requests: group.requests, amount: formatUnits(group.amount) });

/** The number and document of a new statement: the ledger's figures, following the previous statement. */
export function composeDocument(context: StatementContext, ledger: PeriodLedger, previous: StoredStatement | null, sequence: number): { number: string; document: string } {
  const before = previous === null ? null : readDocument(previous);
  const figures = statementFigures(ledger, before === null ? null : unitsToNano(before.closing));
  const number = statementNumber(context.numberPrefix, context.month.year, sequence);
  const document: StatementDocument = {
    version: 1,
    number,
    previous_number: before?.number ?? null,
    issued_at: context.issuedAt.toISOString(),
    period: { month: context.month.month, start: context.month.start.toISOString(), end: context.month.end.toISOString() },
    account: { id: context.account.id, name: context.account.name },
    issuer: { name: context.issuer.name, address: [...context.issuer.address], tax_id: context.issuer.tax_id, footer: context.issuer.footer },
    currency: context.currency.toUpperCase(),
    opening: formatUnits(figures.opening),
    earlier_entries: formatUnits(figures.earlier),
    lines: MOVEMENT_LINES.map((line) => ({ id: line.id, label: line.label, sign: line.sign, amount: formatUnits(figures.movements[line.id]) })),
    closing: formatUnits(figures.closing),
    charges: {
      requests: figures.requests,
      by_model: figures.chargesByModel.map((group) => ({ model: group.id, ...groupView(group) })),
      payer_kind: 'member',
      by_payer: figures.chargesByPayer.map((group) => ({ id: group.id, name: group.name, ...groupView(group) })),
    },
  };
  return { number, document: JSON.stringify(document) };
}
