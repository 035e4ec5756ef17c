// /console/admin/codes — generate redemption codes (their texts shown once, with a
// CSV download built in the browser) and list the codes issued so far.
import { apiGet, apiPost } from '../api.js';
import { named } from '../payments.js';
import { h, replace } from '../dom.js';
import { downloadText, toCsv } from '../download.js';
import { createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { AMOUNT_PATTERN, AMOUNT_PATTERN_MESSAGE, formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { announce } from '../status.js';
import { dataTable } from '../table.js';
import { endOfDayIso, todayInputValue } from '../time.js';
import type { NewRedemptionCode, RedemptionCode } from '../types.js';
import { badge, buttonRow, money, pageHeading, section, timeEl, type BadgeTone } from '../ui.js';

const LIST_LIMIT = 200;
const MAX_BATCH = 1000;

export const adminCodesPage: Page = {
  title: 'Codes',
  admin: true,
  render(context: PageContext) {
    const list = h('div');
    const generated = h('div', { class: 'generated-codes' });
    const refreshList = () => loadInto(list,
      () => apiGet<{ codes: RedemptionCode[] }>(`/api/admin/redemption-codes?limit=${LIST_LIMIT}`, { signal: context.signal }),
      (data) => codeTable(data.codes));

    context.root.append(
      pageHeading('Redemption codes', 'Codes add credit to the account that redeems them, once.'),
      section('Generate codes', generateForm((codes) => {
        showGenerated(generated, codes);
        void refreshList();
      }), generated),
      section('Issued codes',
        h('div', { class: 'button-row' },
          h('a', { class: 'button', href: '/api/admin/redemption-codes?format=csv', download: true }, 'Download all codes (CSV)')),
        list));
    void refreshList();
  },
};

function generateForm(onGenerated: (codes: NewRedemptionCode[]) => void): HTMLFormElement {
  return createForm({
    label: 'Generate codes',
    submitLabel: 'Generate codes',
    fields: [
      inputField({ name: 'count', label: 'Number of codes', type: 'number', required: true, value: 10, attrs: { min: 1, max: MAX_BATCH, step: 1, inputmode: 'numeric' } }),
      inputField({ name: 'amount', label: 'Amount per code', required: true, attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off', placeholder: 'e.g. 5' } }),
      inputField({ name: 'expires_at', label: 'Expiry date', type: 'date', hint: 'Optional. Codes can be redeemed through the end of this day (UTC).', attrs: { min: todayInputValue() } }),
    ],
    async onSubmit(form) {
      const expiry = valueOf(form, 'expires_at');
      const body = {
        count: Number.parseInt(valueOf(form, 'count'), 10),
        amount: valueOf(form, 'amount'),
        ...(expiry ? { expires_at: endOfDayIso(expiry) } : {}),
      };
      const result = await apiPost<{ codes: NewRedemptionCode[] }>('/api/admin/redemption-codes', body);
      onGenerated(result.codes);
    },
  });
}

function showGenerated(container: HTMLElement, codes: readonly NewRedemptionCode[]): void {
  const download = h('button', {
    type: 'button', class: 'button button-primary',
    onclick: () => downloadText(`redemption-codes-${new Date().toISOString().slice(0, 10)}.csv`, codesCsv(codes)),
  }, 'Download CSV');
  const dismiss = h('button', { type: 'button', class: 'button', onclick: () => container.replaceChildren() }, 'Done');
  replace(container, h('div', { class: 'panel', role: 'group', 'aria-label': 'New codes' },
    h('p', { class: 'notice notice-warn' },
      h('strong', null, `${codes.length} new code${codes.length === 1 ? '' : 's'}. They will not be shown again.`),
      ' Download them or copy them now.'),
    buttonRow(download, dismiss),
    dataTable({
      caption: 'New codes',
      hideCaption: true,
      rows: codes,
      emptyText: 'No codes were generated.',
      testId: 'new-codes-table',
      columns: [
        { label: 'Code', cell: (code) => h('code', { class: 'selectable' }, code.code) },
        { label: 'Amount', cell: (code) => money(code.amount), numeric: true },
        { label: 'Expires', cell: (code) => (code.expires_at ? timeEl(code.expires_at) : 'Never') },
      ],
    })));
  announce(`${codes.length} codes generated, worth ${formatMoney(codes[0]?.amount ?? '0')} each.`);
  // Focus lands on the download, the one thing to do before the codes are gone.
  download.focus();
}

/** Same columns as the server's CSV: id,code,amount,expires_at. */
function codesCsv(codes: readonly NewRedemptionCode[]): string {
  return toCsv([
    ['id', 'code', 'amount', 'expires_at'],
    ...codes.map((code) => [code.id, code.code, code.amount, code.expires_at]),
  ]);
}

const STATUS_TONES: Record<RedemptionCode['status'], BadgeTone> = { unused: 'good', redeemed: 'neutral', expired: 'warn' };

function codeTable(codes: readonly RedemptionCode[]): HTMLElement {
  return dataTable({
    caption: `Issued codes, newest ${LIST_LIMIT}`,
    hideCaption: true,
    rows: codes,
    emptyText: 'No codes issued yet.',
    testId: 'codes-table',
    columns: [
      { label: 'ID', cell: (code) => h('code', null, code.id) },
      { label: 'Amount', cell: (code) => money(code.amount), numeric: true },
      { label: 'Status', cell: (code) => badge(code.status, STATUS_TONES[code.status] ?? 'neutral') },
      { label: 'Created', cell: (code) => timeEl(code.created_at) },
      { label: 'Created by', cell: (code) => code.created_by ?? '—' },
      { label: 'Expires', cell: (code) => (code.expires_at ? timeEl(code.expires_at) : 'Never') },
      { label: 'Redeemed by', cell: (code) => (code.redeemed_by === null ? '—' : named(code.redeemed_by_name, code.redeemed_by)) },
      { label: 'Redeemed', cell: (code) => timeEl(code.redeemed_at) },
    ],
  });
}
