/**
 * A statement as a PDF (A4), drawn with pdfkit. Loaded on the first PDF asked for, so a gateway that
 * never renders one never loads it. pdfkit's standard fonts carry Latin-1 only: any other character
 * of a name is printed as "?" (the HTML page and the CSV keep it).
 */
import type { StatementDocument } from './document';
import { shownAmount } from './shown';

type Pdf = PDFKit.PDFDocument;

const MARGIN = 50;
const A4_WIDTH = 595.28;
const WIDTH = A4_WIDTH - 2 * MARGIN;
const AMOUNT_WIDTH = 140;
const COUNT_WIDTH = 70;

/** Characters the standard fonts' encoding (WinAnsi) has, others as "?". */
function latin(text: string): string {
  return text.replace(/[^\x20-\x7e\xa0-\xff]/g, '?');
}

function row(pdf: Pdf, label: string, amount: string, options: { bold?: boolean; count?: string } = {}): void {
  const y = pdf.y;
  pdf.font(options.bold === true ? 'Helvetica-Bold' : 'Helvetica');
  const labelWidth = WIDTH - AMOUNT_WIDTH - (options.count === undefined ? 0 : COUNT_WIDTH);
  pdf.text(latin(label), MARGIN, y, { width: labelWidth });
  const bottom = pdf.y;
  if (options.count !== undefined) pdf.text(options.count, MARGIN + labelWidth, y, { width: COUNT_WIDTH, align: 'right' });
  pdf.text(amount, MARGIN + WIDTH - AMOUNT_WIDTH, y, { width: AMOUNT_WIDTH, align: 'right' });
  pdf.y = Math.max(bottom, pdf.y) + 3;
  pdf.x = MARGIN;
}

function heading(pdf: Pdf, text: string): void {
  pdf.moveDown(0.8).font('Helvetica-Bold').fontSize(12).text(latin(text), MARGIN).fontSize(10).moveDown(0.3);
}

function groups(pdf: Pdf, rows: readonly { label: string; requests: number; amount: string }[], currency: string): void {
  if (rows.length === 0) pdf.font('Helvetica').text('No charges in this period.', MARGIN);
  for (const group of rows) row(pdf, group.label, shownAmount(group.amount, currency), { count: String(group.requests) });
}

function draw(pdf: Pdf, document: StatementDocument): void {
  const { currency, issuer } = document;
  const shown = (units: string) => shownAmount(units, currency);
  pdf.font('Helvetica-Bold').fontSize(16).text(latin(issuer.name), MARGIN, MARGIN, { width: WIDTH / 2 });
  pdf.font('Helvetica').fontSize(10);
  for (const line of issuer.address) pdf.text(latin(line), { width: WIDTH / 2 });
  if (issuer.tax_id !== '') pdf.text(latin(`Tax ID: ${issuer.tax_id}`), { width: WIDTH / 2 });
  const left = pdf.y;
  pdf.font('Helvetica-Bold').fontSize(16).text('Statement', MARGIN + WIDTH / 2, MARGIN, { width: WIDTH / 2, align: 'right' });
  pdf.fontSize(10).text(document.number, { width: WIDTH / 2, align: 'right' });
  pdf.font('Helvetica').text(`Period: ${document.period.month} (UTC)`, { width: WIDTH / 2, align: 'right' });
  pdf.text(`Issued: ${document.issued_at.slice(0, 10)}`, { width: WIDTH / 2, align: 'right' });
  pdf.y = Math.max(left, pdf.y) + 8;
  pdf.moveTo(MARGIN, pdf.y).lineTo(MARGIN + WIDTH, pdf.y).lineWidth(1.5).stroke();

  heading(pdf, 'Account');
  pdf.font('Helvetica').text(latin(`${document.account.name} (${document.account.id})`), MARGIN);

  heading(pdf, 'Summary');
  const opening = document.previous_number === null ? 'Opening balance' : `Opening balance (closing of ${document.previous_number})`;
  row(pdf, opening, shown(document.opening));
  if (document.earlier_entries !== '0') row(pdf, 'Earlier entries recorded since the last statement', shown(document.earlier_entries));
  for (const line of document.lines) {
    if (line.amount === '0' && line.id !== 'charges') continue;
    row(pdf, line.label, shown(line.sign < 0 && line.amount !== '0' ? `-${line.amount}` : line.amount));
  }
  row(pdf, 'Closing balance', shown(document.closing), { bold: true });

  heading(pdf, 'Charges by model');
  groups(pdf, document.charges.by_model.map((group) => ({ label: group.model, requests: group.requests, amount: group.amount })), currency);
  heading(pdf, `Charges by ${document.charges.payer_kind}`);
  groups(pdf, document.charges.by_payer.map((group) => ({ label: group.name === null ? group.id : `${group.name} (${group.id})`, requests: group.requests, amount: group.amount })), currency);

  pdf.moveDown(1.5).font('Helvetica').fontSize(8.5).fillColor('#57606a');
  pdf.text('Amounts are rounded to the cent; the exact figures, to the nano-unit, are in this statement\'s CSV and JSON. The period is the calendar month in UTC.', MARGIN, pdf.y, { width: WIDTH });
  if (issuer.footer !== '') pdf.moveDown(0.4).text(latin(issuer.footer), { width: WIDTH });
}

/** The statement's PDF bytes. */
export async function statementPdf(document: StatementDocument): Promise<Buffer> {
  const { default: PDFDocument } = await import('pdfkit');
  const pdf = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    info: { Title: `Statement ${document.number}`, Author: latin(document.issuer.name), CreationDate: new Date(document.issued_at) },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });
  draw(pdf, document);
  pdf.end();
  return done;
}
