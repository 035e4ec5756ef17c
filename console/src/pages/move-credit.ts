// Top Up's "Move credit" section: credit moved between the person's own account and each
// organisation where they are an owner or billing member (POST /api/transfers). Nothing shows for
// someone who may move money for no organisation. The API judges the amount against what the source
// has available; its refusal (409, naming what is available) is shown beside the amount.
import { movesMoney, organisationsLoaded, refreshOrganisations } from '../acting.js';
import { apiGet, apiPost } from '../api.js';
import { h, replace } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { AMOUNT_PATTERN, AMOUNT_PATTERN_MESSAGE, formatMoney } from '../money.js';
import type { PageContext } from '../page.js';
import { statusLine } from '../status.js';
import { transferTable } from '../transfers.js';
import type { AccountSummary, Organisation, Transfer } from '../types.js';
import { money, section } from '../ui.js';

/** One account credit can move into or out of, with its balance as last read. */
interface Side {
  id: string;
  name: string;
  balance: string | null;
}

/** The person's own account first, then each organisation they may move money for. */
async function readSides(signal: AbortSignal): Promise<Side[]> {
  refreshOrganisations();
  const [summary, organisations] = await Promise.all([
    apiGet<AccountSummary>('/api/account', { signal }),
    organisationsLoaded(),
  ]);
  return [
    { id: summary.account.id, name: `${summary.account.name} (personal)`, balance: summary.balance },
    ...organisations.filter(movesMoney).map((organisation: Organisation) => ({ id: organisation.id, name: organisation.name, balance: organisation.balance })),
  ];
}

/** Directions as "from|to": personal to each organisation and back. */
function directions(sides: readonly Side[]): Array<{ value: string; label: string }> {
  const [personal, ...organisations] = sides;
  if (personal === undefined) return [];
  return organisations.flatMap((organisation) => [
    { value: `${personal.id}|${organisation.id}`, label: `From ${personal.name} to ${organisation.name}` },
    { value: `${organisation.id}|${personal.id}`, label: `From ${organisation.name} to ${personal.name}` },
  ]);
}

function balanceList(sides: readonly Side[]): HTMLElement {
  return h('ul', { 'aria-label': 'Balances' }, sides.map((side) =>
    h('li', null, `${side.name}: `, money(side.balance, `move-balance-${side.id}`))));
}

/**
 * The section, filled once the accounts are read; `onPersonalBalance` hears the person's own balance
 * after each move, so the page's other figures of it agree.
 */
export function moveCreditSection(context: PageContext, onPersonalBalance: (balance: string) => void): HTMLElement {
  const slot = h('div');
  void readSides(context.signal).then((sides) => {
    if (sides.length < 2) return;
    replace(slot, moveCreditForm(context, sides, onPersonalBalance));
  }).catch(() => undefined);
  return slot;
}

function moveCreditForm(context: PageContext, initial: Side[], onPersonalBalance: (balance: string) => void): HTMLElement {
  let sides = initial;
  const balances = h('div', { 'data-testid': 'move-balances' }, balanceList(sides));
  const history = h('div');
  const status = statusLine();
  const options = directions(sides);

  /** The organisation side of the chosen direction: its transfers are the ones listed. */
  const chosenOrganisation = (form: HTMLFormElement): Side | undefined => {
    const personalId = sides[0]?.id;
    const ids = valueOf(form, 'direction').split('|');
    return sides.find((side) => side.id !== personalId && ids.includes(side.id));
  };
  const refreshHistory = (form: HTMLFormElement) => {
    const organisation = chosenOrganisation(form);
    if (organisation === undefined) return Promise.resolve(false);
    return loadInto(history,
      () => apiGet<{ transfers: Transfer[] }>(`/api/transfers?account_id=${encodeURIComponent(organisation.id)}`, { signal: context.signal }),
      (data) => transferTable(data.transfers.slice(0, 20), organisation.name));
  };

  const form = createForm({
    label: 'Move credit',
    submitLabel: 'Move credit',
    fields: [
      selectField({ name: 'direction', label: 'Direction', options, value: options[0]?.value }),
      inputField({ name: 'amount', label: 'Amount', required: true, attrs: { inputmode: 'decimal', pattern: AMOUNT_PATTERN, 'data-pattern-message': AMOUNT_PATTERN_MESSAGE, autocomplete: 'off', placeholder: 'e.g. 5' } }),
      inputField({ name: 'note', label: 'Note (optional)', hint: 'Shown with the transfer on both accounts.', attrs: { maxlength: 200, autocomplete: 'off' } }),
    ],
    async onSubmit(form) {
      status.clear();
      const [from, to] = valueOf(form, 'direction').split('|');
      const note = valueOf(form, 'note');
      const result = await apiPost<{ transfer: Transfer }>('/api/transfers', {
        from_account_id: from,
        to_account_id: to,
        amount: valueOf(form, 'amount'),
        ...(note === '' ? {} : { note }),
      });
      const { transfer } = result;
      form.reset();
      // Reset puts the first direction back; keep the one just used, so its list stays in view.
      const select = form.elements.namedItem('direction');
      if (select instanceof HTMLSelectElement) select.value = `${transfer.from_account_id}|${transfer.to_account_id}`;
      status.show(`Moved ${formatMoney(transfer.amount)} from ${transfer.from_account_name ?? 'one account'} to ${transfer.to_account_name ?? 'the other'}.`, 'success');
      sides = await readSides(context.signal);
      replace(balances, balanceList(sides));
      if (sides[0]?.balance) onPersonalBalance(sides[0].balance);
      void refreshHistory(form);
    },
  });
  form.addEventListener('change', (event) => {
    if (event.target instanceof HTMLSelectElement && event.target.name === 'direction') void refreshHistory(form);
  });
  void refreshHistory(form);
  return section('Move credit',
    h('p', { class: 'hint' }, 'Move credit between your own account and an organisation you are an owner or billing member of.'),
    balances, form, status.element,
    h('h3', null, 'Recent transfers'), history);
}
