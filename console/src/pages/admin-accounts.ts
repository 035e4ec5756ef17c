// /console/admin/accounts — every account with its balance; create, disable/enable, credit, budget,
// end its sessions; its keys, with the operator's limits on each.
import { apiDelete, apiGet, apiPatch, apiPost, errorMessage, withQuery } from '../api.js';
import { replaceQuery } from '../router.js';
import { confirmAction } from '../confirm.js';
import { h } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { budgetFields, describeBudget, describeOperatorLimits, describeRateLimits, limitFields, readBudget, readLimits } from '../limits.js';
import { loadInto } from '../load.js';
import { AMOUNT_PATTERN, AMOUNT_PATTERN_MESSAGE, formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { inlinePanel, type Panel } from '../panel.js';
import { currentAccount } from '../session.js';
import { statusLine, type StatusLine } from '../status.js';
import { dataTable } from '../table.js';
import type { Account, AdminAccount, ApiKey, Budget, Credit, KeyStatus, PaymentDebit, PricedModel } from '../types.js';
import { badge, buttonRow, count, money, pageHeading, timeEl, type BadgeTone } from '../ui.js';

interface AccountsView {
  context: PageContext;
  panel: Panel;
  status: StatusLine;
  list: HTMLElement;
  /** What the list shows: the search, the order and the page. */
  listing: { q: string; sort: string; offset: number };
  /** The price list's model names, loaded once when a key's limits are first edited. */
  models: () => Promise<string[] | null>;
}

export const adminAccountsPage: Page = {
  title: 'Accounts',
  admin: true,
  render(context: PageContext) {
    let models: Promise<string[] | null> | undefined;
    const view: AccountsView = {
      context, panel: inlinePanel(), status: statusLine(), list: h('div'),
      listing: { q: context.query.get('q') ?? '', sort: context.query.get('sort') ?? 'name', offset: 0 },
      models: () => (models ??= loadModelNames(context.signal)),
    };
    const newButton = h('button', {
      type: 'button', class: 'button button-primary', 'aria-expanded': 'false',
      onclick: () => openCreateForm(view, newButton),
    }, 'New account');
    context.root.append(
      pageHeading('Accounts', 'All accounts on this gateway, with their balances.'),
      buttonRow(newButton),
      searchForm(view),
      view.status.element,
      view.panel.element,
      view.list);
    void refresh(view);
  },
};

const PAGE_SIZE = 50;
const SORTS = [
  { value: 'name', label: 'Name' },
  { value: 'balance', label: 'Balance, largest first' },
  { value: 'last_request', label: 'Last request, newest first' },
  { value: 'created', label: 'Created, newest first' },
];

function searchForm(view: AccountsView): HTMLFormElement {
  return createForm({
    label: 'Find accounts',
    className: 'form filters',
    submitLabel: 'Search',
    fields: [
      inputField({ name: 'q', label: 'Name or e-mail contains', type: 'search', value: view.listing.q, attrs: { autocomplete: 'off', spellcheck: 'false' } }),
      selectField({ name: 'sort', label: 'Sort by', value: view.listing.sort, options: SORTS }),
    ],
    async onSubmit(form) {
      view.listing = { q: valueOf(form, 'q'), sort: valueOf(form, 'sort') || 'name', offset: 0 };
      replaceQuery(new URLSearchParams({ ...(view.listing.q && { q: view.listing.q }), sort: view.listing.sort }));
      await refresh(view);
    },
  });
}

function refresh(view: AccountsView): Promise<boolean> {
  const { q, sort, offset } = view.listing;
  return loadInto(view.list,
    () => apiGet<{ accounts: AdminAccount[]; total: number }>(withQuery('/api/admin/accounts', { q: q || undefined, sort, limit: PAGE_SIZE, offset }), { signal: view.context.signal }),
    (data) => h('div', null, accountTable(view, data.accounts), pager(view, data.accounts.length, data.total)));
}

function pager(view: AccountsView, shown: number, total: number): HTMLElement {
  const { offset } = view.listing;
  const go = (to: number) => {
    view.listing = { ...view.listing, offset: to };
    void refresh(view);
  };
  const previous = h('button', { type: 'button', class: 'button button-small', disabled: offset === 0, onclick: () => go(Math.max(0, offset - PAGE_SIZE)) }, 'Previous');
  const next = h('button', { type: 'button', class: 'button button-small', disabled: offset + shown >= total, onclick: () => go(offset + PAGE_SIZE) }, 'Next');
  const range = total === 0 ? 'No accounts match.' : `${count(offset + 1)}–${count(offset + shown)} of ${count(total)}`;
  return h('div', { class: 'button-row pager' }, h('span', { 'data-testid': 'accounts-range' }, range), previous, next);
}

function accountTable(view: AccountsView, accounts: readonly AdminAccount[]): HTMLElement {
  return dataTable({
    caption: 'Accounts',
    hideCaption: true,
    rows: accounts,
    emptyText: 'No accounts.',
    testId: 'accounts-table',
    columns: [
      { label: 'Name', cell: (account) => account.name },
      { label: 'E-mail', cell: (account) => account.email ?? '—' },
      { label: 'Role', cell: (account) => account.role },
      { label: 'Status', cell: (account) => (account.disabled ? badge('disabled', 'bad') : badge('active', 'good')) },
      { label: 'Balance', cell: (account) => money(account.balance), numeric: true },
      { label: 'Held', cell: (account) => money(account.held), numeric: true },
      { label: 'Budget', cell: (account) => describeAccountBudget(account.budget) },
      { label: 'Last request', cell: (account) => (account.last_request_at === null ? 'never' : timeEl(account.last_request_at, true)) },
      { label: 'Created', cell: (account) => timeEl(account.created_at, true) },
      { label: 'Actions', cell: (account) => accountActions(view, account) },
    ],
  });
}

function accountActions(view: AccountsView, account: AdminAccount): HTMLElement {
  const credit = h('button', {
    type: 'button', class: 'button button-small', 'aria-label': `Adjust the balance of ${account.name}`,
    onclick: () => openAdjustForm(view, account, credit),
  }, 'Adjust');
  const budget = h('button', {
    type: 'button', class: 'button button-small', 'aria-label': `Budget for ${account.name}`,
    onclick: () => openBudgetForm(view, account, budget),
  }, 'Budget');
  const keys = h('button', {
    type: 'button', class: 'button button-small', 'aria-label': `Keys of ${account.name}`,
    onclick: () => void openKeyList(view, account, keys),
  }, 'Keys');
  const endSessions = h('button', {
    type: 'button', class: 'button button-small', 'aria-label': `End sessions of ${account.name}`,
    onclick: () => void endAllSessions(view, account),
  }, 'End sessions');
  // An administrator cannot lock themselves out from here.
  const isSelf = currentAccount()?.id === account.id;
  const toggle = isSelf ? null : h('button', {
    type: 'button',
    class: `button button-small ${account.disabled ? '' : 'button-danger'}`.trim(),
    'aria-label': `${account.disabled ? 'Enable' : 'Disable'} ${account.name}`,
    onclick: () => void setDisabled(view, account, !account.disabled),
  }, account.disabled ? 'Enable' : 'Disable');
  return h('div', { class: 'row-actions' }, credit, budget, keys, endSessions, toggle);
}

async function setDisabled(view: AccountsView, account: AdminAccount, disabled: boolean): Promise<void> {
  if (disabled) {
    const confirmed = await confirmAction({
      title: `Disable “${account.name}”?`,
      message: 'They will be signed out and their tokens refused until the account is enabled again.',
      confirmLabel: 'Disable account',
    });
    if (!confirmed) return;
  }
  try {
    await apiPatch<{ account: Account }>(`/api/admin/accounts/${encodeURIComponent(account.id)}`, { disabled });
    view.status.show(`Account “${account.name}” ${disabled ? 'disabled' : 'enabled'}.`, 'success');
  } catch (error) {
    view.status.show(`Could not update “${account.name}”: ${errorMessage(error)}`, 'error');
  }
  void refresh(view);
}

function openCreateForm(view: AccountsView, opener: HTMLElement): void {
  const form = createForm({
    submitLabel: 'Create account',
    secondary: [cancelButton(view.panel)],
    fields: [
      inputField({ name: 'name', label: 'Name', required: true, hint: '3–40 characters: letters, digits, dot, dash and underscore.', attrs: { autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' } }),
      inputField({ name: 'email', label: 'E-mail (optional)', type: 'email', attrs: { autocomplete: 'off' } }),
      inputField({ name: 'password', label: 'Password', type: 'password', required: true, hint: 'At least 10 characters.', attrs: { autocomplete: 'new-password', minlength: 10 } }),
      selectField({ name: 'role', label: 'Role', value: 'user', options: [{ value: 'user', label: 'User' }, { value: 'admin', label: 'Administrator' }] }),
    ],
    async onSubmit(form) {
      const email = valueOf(form, 'email');
      const passwordInput = form.elements.namedItem('password');
      const body = {
        name: valueOf(form, 'name'),
        ...(email ? { email } : {}),
        password: passwordInput instanceof HTMLInputElement ? passwordInput.value : '',
        role: valueOf(form, 'role'),
      };
      const created = await apiPost<{ account: Account }>('/api/admin/accounts', body);
      view.panel.close();
      view.status.show(`Account “${created.account.name}” created.`, 'success');
      void refresh(view);
    },
  });
  view.panel.open('New account', form, opener);
}

// One form for both directions: a credit adds funds, a debit takes back what was credited by
// mistake; either way a note says why, and the account's ledger shows the entry.
function openAdjustForm(view: AccountsView, account: AdminAccount, opener: HTMLElement): void {
  const form = createForm({
    submitLabel: 'Save adjustment',
    secondary: [cancelButton(view.panel)],
    fields: [
      selectField({ name: 'direction', label: 'Adjustment', value: 'credit', options: [{ value: 'credit', label: 'Credit: add funds' }, { value: 'debit', label: 'Debit: take funds back' }] }),
      inputField({ name: 'amount', label: 'Amount', required: true, hint: `Current balance: ${formatMoney(account.balance)}.`, attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off' } }),
      inputField({ name: 'note', label: 'Note', required: true, hint: 'Why, e.g. an invoice number or the mistake it corrects. Shown in the account’s ledger.', attrs: { maxlength: 200, autocomplete: 'off' } }),
    ],
    async onSubmit(form) {
      const body = { amount: valueOf(form, 'amount'), note: valueOf(form, 'note') };
      const path = `/api/admin/accounts/${encodeURIComponent(account.id)}`;
      if (valueOf(form, 'direction') === 'debit') {
        const result = await apiPost<{ debit: PaymentDebit; balance: string }>(`${path}/debits`, body);
        view.status.show(`Took ${formatMoney(result.debit.amount)} from “${account.name}”. Balance now ${formatMoney(result.balance)}.`, 'success');
      } else {
        const result = await apiPost<{ credit: Credit; balance: string }>(`${path}/credits`, body);
        view.status.show(`Added ${formatMoney(result.credit.amount)} to “${account.name}”. Balance now ${formatMoney(result.balance)}.`, 'success');
      }
      view.panel.close();
      void refresh(view);
    },
  });
  view.panel.open(`Adjust the balance of ${account.name}`, form, opener);
}

function describeAccountBudget(budget: Budget | null): string {
  return budget === null ? 'Role default' : describeBudget(budget);
}

function openBudgetForm(view: AccountsView, account: AdminAccount, opener: HTMLElement): void {
  const form = createForm({
    submitLabel: 'Save budget',
    secondary: [cancelButton(view.panel)],
    fields: budgetFields(account.budget),
    async onSubmit(form) {
      const budget = readBudget(form);
      await apiPatch<{ account: Account }>(`/api/admin/accounts/${encodeURIComponent(account.id)}`, { budget });
      view.panel.close();
      view.status.show(`Budget of “${account.name}” ${budget === null ? 'removed; its role’s default applies, if any' : 'saved'}.`, 'success');
      void refresh(view);
    },
  });
  view.panel.open(`Budget for ${account.name}`, form, opener);
}

async function endAllSessions(view: AccountsView, account: AdminAccount): Promise<void> {
  const isSelf = currentAccount()?.id === account.id;
  const confirmed = await confirmAction({
    title: `End the sessions of “${account.name}”?`,
    message: isSelf
      ? 'Every other console session and every management token of your account ends; this one stays.'
      : 'They are signed out everywhere and their management tokens are refused from now on. Their API keys keep working.',
    confirmLabel: 'End sessions',
  });
  if (!confirmed) return;
  try {
    const { ended } = await apiDelete<{ ended: number }>(`/api/admin/accounts/${encodeURIComponent(account.id)}/sessions`);
    view.status.show(`Ended ${ended} ${ended === 1 ? 'session or token' : 'sessions and tokens'} of “${account.name}”.`, 'success');
  } catch (error) {
    view.status.show(`Could not end the sessions of “${account.name}”: ${errorMessage(error)}`, 'error');
  }
}

async function loadModelNames(signal: AbortSignal): Promise<string[] | null> {
  try {
    const data = await apiGet<{ models: PricedModel[] }>('/api/prices', { signal });
    return data.models.map((model) => model.model);
  } catch {
    return null;
  }
}

const KEY_TONES: Record<KeyStatus, BadgeTone> = { active: 'good', revoked: 'bad', expired: 'neutral' };

function keyLabel(key: ApiKey): string {
  return key.name ?? `${key.prefix}…${key.last4}`;
}

/** The account's keys in the panel, each with what it enforces and what the operator set. */
async function openKeyList(view: AccountsView, account: AdminAccount, opener: HTMLElement): Promise<void> {
  const list = h('div');
  view.panel.open(`Keys of ${account.name}`, h('div', null,
    h('p', { class: 'hint' }, 'Operator limits are yours to set: the owner can tighten them, never loosen or remove them.'),
    list), opener);
  await loadInto(list,
    () => apiGet<{ keys: ApiKey[] }>(`/api/admin/accounts/${encodeURIComponent(account.id)}/keys`, { signal: view.context.signal }),
    (data) => dataTable({
      caption: `Keys of ${account.name}`,
      hideCaption: true,
      rows: data.keys,
      emptyText: 'This account has no keys.',
      testId: 'admin-key-table',
      columns: [
        { label: 'Name', cell: (key) => key.name ?? h('span', { class: 'muted' }, 'Unnamed') },
        { label: 'Key', cell: (key) => h('code', { class: 'key-mask' }, `${key.prefix}…${key.last4}`) },
        { label: 'Status', cell: (key) => badge(key.status, KEY_TONES[key.status]) },
        { label: 'Spent / limit', cell: (key) => [money(key.spent), ' / ', key.spend_limit === null ? 'no limit' : money(key.spend_limit)], numeric: true },
        { label: 'Models', cell: (key) => (key.models ? key.models.join(', ') : 'All') },
        { label: 'Rate limits', cell: (key) => describeRateLimits(key.rate_limits) },
        { label: 'Set by the operator', cell: (key) => describeOperatorLimits(key.operator_limits) },
        {
          label: 'Actions',
          cell: (key) => (key.status === 'active'
            ? h('button', {
              type: 'button', class: 'button button-small', 'aria-label': `Operator limits for ${keyLabel(key)}`,
              onclick: () => void openOperatorLimitsForm(view, account, key, opener),
            }, 'Operator limits')
            : null),
        },
      ],
    }));
}

/** The operator's limits on one key; every field is sent, so an emptied one removes that limit. */
async function openOperatorLimitsForm(view: AccountsView, account: AdminAccount, key: ApiKey, opener: HTMLElement): Promise<void> {
  const models = await view.models();
  const operator = key.operator_limits;
  const form = createForm({
    submitLabel: 'Save operator limits',
    secondary: [cancelButton(view.panel)],
    fields: [
      ...limitFields(models, operator ?? undefined),
      ...budgetFields(operator?.budget ?? null),
    ],
    async onSubmit(form) {
      const updated = await apiPatch<{ key: ApiKey }>(`/api/admin/keys/${encodeURIComponent(key.id)}`, { ...readLimits(form), budget: readBudget(form) });
      view.status.show(`Operator limits of “${keyLabel(updated.key)}” (${account.name}) saved: ${describeOperatorLimits(updated.key.operator_limits)}.`, 'success');
      await openKeyList(view, account, opener);
    },
  });
  view.panel.open(`Operator limits: ${keyLabel(key)} (${account.name})`, form, opener);
}

function cancelButton(panel: Panel): HTMLButtonElement {
  return h('button', { type: 'button', class: 'button', onclick: () => panel.close() }, 'Cancel');
}
