/**
 * A statement as a printable HTML page: one self-contained document (no script, no request for
 * anything else), laid out for A4 when printed. Its style is allowed by hash in the answer's CSP.
 */
import { createHash } from 'node:crypto';
import type { StatementDocument } from './document';
import { shownAmount } from './shown';

const STYLE = `
@page { size: A4; margin: 18mm 16mm; }
* { box-sizing: border-box; }
body { font: 10.5pt/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1b1f24; margin: 0 auto; max-width: 190mm; padding: 12mm 8mm; }
header { display: flex; justify-content: space-between; gap: 12mm; border-bottom: 2px solid #1b1f24; padding-bottom: 4mm; }
h1 { font-size: 17pt; margin: 0 0 1mm; }
h2 { font-size: 11.5pt; margin: 7mm 0 2mm; }
.issuer p, .meta p { margin: 0; }
.meta { text-align: right; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 1.4mm 2mm; border-bottom: 1px solid #d0d7de; vertical-align: top; }
th { font-weight: 600; color: #57606a; font-size: 9pt; text-transform: uppercase; letter-spacing: .03em; }
td.amount, th.amount, td.count, th.count { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 700; border-top: 2px solid #1b1f24; border-bottom: none; }
.muted { color: #57606a; }
footer { margin-top: 10mm; padding-top: 3mm; border-top: 1px solid #d0d7de; font-size: 9pt; color: #57606a; }
@media print { body { padding: 0; max-width: none; } a { color: inherit; text-decoration: none; } }
`;

/** The CSP source that lets the page's one style element apply, and nothing else. */
export const STATEMENT_HTML_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; frame-ancestors 'none'`;

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function amountCell(units: string, currency: string): string {
  return `<td class="amount" title="${escape(`${units} ${currency}`)}">${escape(shownAmount(units, currency))}</td>`;
}

function groupRows(rows: readonly { label: string; requests: number; amount: string }[], currency: string): string {
  if (rows.length === 0) return '<tr><td colspan="3" class="muted">No charges in this period.</td></tr>';
  return rows.map((row) => `<tr><td>${escape(row.label)}</td><td class="count">${row.requests}</td>${amountCell(row.amount, currency)}</tr>`).join('');
}

export function statementHtml(document: StatementDocument): string {
  const { currency, issuer } = document;
  const signed = (sign: number, amount: string) => (sign < 0 && amount !== '0' ? `-${amount}` : amount);
  const movements = document.lines
    .filter((line) => line.amount !== '0' || line.id === 'charges')
    .map((line) => `<tr><td>${escape(line.label)}</td>${amountCell(signed(line.sign, line.amount), currency)}</tr>`)
    .join('');
  const earlier = document.earlier_entries === '0' ? '' : `<tr><td>Earlier entries recorded since the last statement</td>${amountCell(document.earlier_entries, currency)}</tr>`;
  const payerLabel: string = document.charges.payer_kind;
  const byPayer = document.charges.by_payer.map((group) => ({ label: group.name === null ? group.id : `${group.name} (${group.id})`, requests: group.requests, amount: group.amount }));
  const byModel = document.charges.by_model.map((group) => ({ label: group.model, requests: group.requests, amount: group.amount }));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Statement ${escape(document.number)}</title><style>${STYLE}</style></head>
<body>
<header>
  <div class="issuer"><h1>${escape(issuer.name)}</h1>${issuer.address.map((line) => `<p>${escape(line)}</p>`).join('')}${issuer.tax_id === '' ? '' : `<p>Tax ID: ${escape(issuer.tax_id)}</p>`}</div>
  <div class="meta"><h1>Statement</h1><p><strong>${escape(document.number)}</strong></p><p>Period: ${escape(document.period.month)} (UTC)</p><p>Issued: ${escape(document.issued_at.slice(0, 10))}</p></div>
</header>
<h2>Account</h2>
<p>${escape(document.account.name)} <span class="muted">(${escape(document.account.id)})</span></p>
<h2>Summary</h2>
<table>
  <thead><tr><th>Item</th><th class="amount">Amount</th></tr></thead>
  <tbody>
    <tr><td>Opening balance${document.previous_number === null ? '' : ` <span class="muted">(closing of ${escape(document.previous_number)})</span>`}</td>${amountCell(document.opening, currency)}</tr>
    ${earlier}${movements}
    <tr class="total"><td>Closing balance</td>${amountCell(document.closing, currency)}</tr>
  </tbody>
</table>
<h2>Charges by model</h2>
<table><thead><tr><th>Model</th><th class="count">Requests</th><th class="amount">Amount</th></tr></thead><tbody>${groupRows(byModel, currency)}</tbody></table>
<h2>Charges by ${escape(payerLabel)}</h2>
<table><thead><tr><th>${escape(payerLabel[0].toUpperCase() + payerLabel.slice(1))}</th><th class="count">Requests</th><th class="amount">Amount</th></tr></thead><tbody>${groupRows(byPayer, currency)}</tbody></table>
<footer>
  <p>Amounts are rounded to the cent; the exact figures, to the nano-unit, are in this statement's CSV and JSON. The period is the calendar month in UTC.</p>
  ${issuer.footer === '' ? '' : `<p>${escape(issuer.footer)}</p>`}
</footer>
</body></html>
`;
}
