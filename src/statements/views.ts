/**
 * Statements as the management API answers them: each amount exact (decimal units, as the ledger
 * keeps it) with the text a statement shows for it (currency, two decimals).
 */
import type { StoredStatement } from '../store/statements';
import { readDocument, type StatementDocument } from './document';
import { shownAmount } from './shown';

interface Money {
  readonly exact: string;
  readonly shown: string;
}

function money(units: string, currency: string): Money {
  return { exact: units, shown: shownAmount(units, currency) };
}

/** A statement in a list: what it is, and how it opened and closed. */
export function statementSummaryView(stored: StoredStatement) {
  const document = readDocument(stored);
  return {
    id: stored.id,
    number: stored.number,
    month: stored.month,
    issued_at: stored.issuedAt.toISOString(),
    account_id: stored.accountId,
    currency: document.currency,
    opening: money(document.opening, document.currency),
    closing: money(document.closing, document.currency),
  };
}

/** A statement whole: its document, each amount with its shown text, and the hash it was issued with. */
export function statementView(stored: StoredStatement, document: StatementDocument = readDocument(stored)) {
  const { currency } = document;
  return {
    id: stored.id,
    number: document.number,
    previous_number: document.previous_number,
    issued_at: document.issued_at,
    period: document.period,
    account: document.account,
    issuer: document.issuer,
    currency,
    opening: money(document.opening, currency),
    earlier_entries: money(document.earlier_entries, currency),
    lines: document.lines.map((line) => ({ id: line.id, label: line.label, sign: line.sign, amount: money(line.amount, currency) })),
    closing: money(document.closing, currency),
    charges: {
      requests: document.charges.requests,
      by_model: document.charges.by_model.map((group) => ({ model: group.model, requests: group.requests, amount: money(group.amount, currency) })),
      payer_kind: document.charges.payer_kind,
      by_payer: document.charges.by_payer.map((group) => ({ id: group.id, name: group.name, requests: group.requests, amount: money(group.amount, currency) })),
    },
    hash: stored.hash,
  };
}
