// /console/token — the account's API keys: list, add (secret shown once, with the base URLs and
// snippets to use it), edit limits and budget, revoke. Acting for an organisation, its keys through
// /api/orgs/{id}/keys: the member's own (every member's, named, for an owner or admin), made and
// revoked there, and their limits, networks and budget changed as a personal key's
// (PATCH /api/orgs/{id}/keys/{keyId}) by the key's member or an owner or admin.
import { actingOrganisationLoaded, managesMembers } from '../acting.js';
import { budgetsSection } from '../budgets.js';
import { apiDelete, apiGet, apiPatch, apiPost, errorMessage } from '../api.js';
import { confirmAction } from '../confirm.js';
import { connectSection, type ConnectModels } from '../connect.js';
import { h, type Child } from '../dom.js';
import { createForm, inputField, valueOf } from '../forms.js';
import { budgetFields, describeBudget, describeOperatorLimits, describeRateLimits, limitFields, readBudget, readLimits } from '../limits.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { inlinePanel, type Panel } from '../panel.js';
import { secretReveal } from '../secret.js';
import { statusLine, type StatusLine } from '../status.js';
import { dataTable } from '../table.js';
import { endOfDayIso, todayInputValue } from '../time.js';
import type { ApiKey, KeyStatus, Organisation, PricedModel } from '../types.js';
import { badge, buttonRow, money, pageHeading, timeEl, type BadgeTone } from '../ui.js';

interface TokensView {
  context: PageContext;
  /** The organisation acted for, or null for the personal account. */
  organisation: Organisation | null;
  /** Where the keys are listed, made and revoked. */
  keysPath: string;
  panel: Panel;
  status: StatusLine;
  list: HTMLElement;
  /** The budgets' bars, replaced when a budget changes. */
  budgets: HTMLElement;
  /** The models that can answer, fetched once per visit; null when it failed. */
  offered(): Promise<PricedModel[] | null>;
  /** Whether the Playground's own key is listed too (it is left out unless asked for). */
  showPlayground: boolean;
}

async function modelNames(view: TokensView): Promise<string[] | null> {
  return (await view.offered())?.map((model) => model.model) ?? null;
}

/** The models the snippets name: of the key's own list if it has one, of each family where it can. */
function snippetModels(offered: readonly PricedModel[] | null, key: ApiKey): ConnectModels {
  const allowed = (offered ?? []).filter((model) => model.kind === 'text' && (key.models === null || key.models.includes(model.model)));
  const pick = (family: PricedModel['family']) => allowed.find((model) => model.family === family)?.model ?? allowed[0]?.model ?? key.models?.[0] ?? 'MODEL';
  return { openai: pick('openai'), anthropic: pick('anthropic') };
}

export const tokensPage: Page = {
  title: 'Tokens',
  render(context: PageContext) {
    // The heading now, so the router's focus lands on it; the rest once the organisation is known.
    const lead = h('span');
    context.root.append(pageHeading('Tokens', lead));
    void actingOrganisationLoaded().then((organisation) => renderTokens(context, organisation, lead));
  },
};

function renderTokens(context: PageContext, organisation: Organisation | null, lead: HTMLElement): void {
  let offered: Promise<PricedModel[] | null> | undefined;
  const view: TokensView = {
    context,
    organisation,
    keysPath: organisation === null ? '/api/keys' : `/api/orgs/${encodeURIComponent(organisation.id)}/keys`,
    panel: inlinePanel(),
    status: statusLine(),
    list: h('div'),
    budgets: organisation === null ? budgetsSection(context.signal, false) : h('div'),
    offered: () => (offered ??= loadOfferedModels(context.signal)),
    showPlayground: false,
  };
  const addButton = h('button', {
    type: 'button',
    class: 'button button-primary',
    'aria-expanded': 'false',
    onclick: () => void openCreateForm(view, addButton),
  }, 'Add Token');
  lead.textContent = organisation === null
    ? 'API keys let programs call the gateway on this account. Each key can have its own limits.'
    : `API keys that spend ${organisation.name}'s balance, charged to you as its member. Each key can have its own limits.`;
  context.root.append(
    buttonRow(addButton),
    view.status.element,
    view.panel.element,
    view.budgets,
    view.list);
  void refreshList(view);
}

async function loadOfferedModels(signal: AbortSignal): Promise<PricedModel[] | null> {
  try {
    const data = await apiGet<{ models: PricedModel[] }>('/api/prices', { signal });
    // A model whose providers have no key cannot answer: not offered (a key's own choice is kept, see limitFields).
    return data.models.filter((model) => model.available);
  } catch {
    return null;
  }
}

function refreshList(view: TokensView): Promise<boolean> {
  return loadInto(view.list,
    () => apiGet<{ keys: ApiKey[] }>(view.keysPath, { signal: view.context.signal }),
    (data) => {
      // The Playground makes its own short-lived key: not one of the account's tokens, so not listed
      // unless asked for.
      const playground = data.keys.filter((key) => key.playground);
      const listed = view.showPlayground ? data.keys : data.keys.filter((key) => !key.playground);
      return [playground.length === 0 ? null : playgroundToggle(view, playground.length), keyTable(view, listed)];
    });
}

function playgroundToggle(view: TokensView, hidden: number): HTMLElement {
  const box = h('input', { type: 'checkbox', id: 'show-playground-keys', 'data-testid': 'show-playground-keys' });
  box.checked = view.showPlayground;
  box.addEventListener('change', () => {
    view.showPlayground = box.checked;
    void refreshList(view);
  });
  return h('p', { class: 'hint' },
    box, ' ', h('label', { for: 'show-playground-keys' }, `Show the Playground's own key${hidden === 1 ? '' : 's'} (${hidden})`),
    ' — made by the Playground for its turns; each visit replaces the last, and it expires within the hour.');
}

function keyLabel(key: ApiKey): string {
  return key.name ?? `${key.prefix}…${key.last4}`;
}

const STATUS_TONES: Record<KeyStatus, BadgeTone> = { active: 'good', revoked: 'bad', expired: 'neutral' };

function keyTable(view: TokensView, keys: readonly ApiKey[]): HTMLElement {
  return dataTable({
    caption: view.organisation === null ? 'Your API keys' : `API keys in ${view.organisation.name}`,
    hideCaption: true,
    rows: keys,
    emptyText: 'No tokens yet. Use “Add Token” to create one.',
    testId: 'key-table',
    columns: [
      { label: 'Name', cell: (key) => key.name ?? h('span', { class: 'muted' }, 'Unnamed') },
      // An owner or admin lists every member's keys; a member only their own, so no column.
      ...(managesMembers(view.organisation) ? [{ label: 'Member', cell: (key: ApiKey) => key.member_name ?? h('span', { class: 'muted' }, 'Left') }] : []),
      // Only the prefix and last four characters are ever known after creation.
      { label: 'Key', cell: (key) => h('code', { class: 'key-mask' }, `${key.prefix}…${key.last4}`) },
      { label: 'Status', cell: (key) => badge(key.status, STATUS_TONES[key.status]) },
      { label: 'Spent / limit', cell: spentCell, numeric: true },
      { label: 'Today', cell: (key) => money(key.spent_today ?? '0'), numeric: true },
      { label: 'This month', cell: (key) => money(key.spent_month ?? '0'), numeric: true },
      { label: 'Last used', cell: (key) => (key.last_used_at ? timeEl(key.last_used_at) : 'Never') },
      { label: 'Models', cell: (key) => (key.models ? key.models.join(', ') : 'All') },
      { label: 'Rate limits', cell: (key) => describeRateLimits(key.rate_limits) },
      { label: 'Networks', cell: (key) => (key.allowed_networks ? key.allowed_networks.join(', ') : 'Any') },
      { label: 'Set by the operator', cell: (key) => describeOperatorLimits(key.operator_limits) },
      { label: 'Expires', cell: (key) => (key.expires_at ? timeEl(key.expires_at) : 'Never') },
      { label: 'Created', cell: (key) => timeEl(key.created_at) },
      { label: 'Actions', cell: (key) => keyActions(view, key) },
    ],
  });
}

function spentCell(key: ApiKey): Child {
  return [money(key.spent), ' / ', key.spend_limit === null ? 'no limit' : money(key.spend_limit)];
}

function keyActions(view: TokensView, key: ApiKey): Child {
  if (key.status !== 'active') return null;
  const label = keyLabel(key);
  const revoke = h('button', {
    type: 'button',
    class: 'button button-small button-danger',
    'aria-label': `Revoke ${label}`,
    onclick: () => void revokeKey(view, key),
  }, 'Revoke');
  const edit = h('button', {
    type: 'button',
    class: 'button button-small',
    'aria-label': `Edit limits for ${label}`,
    onclick: () => void openEditForm(view, key, edit),
  }, 'Edit limits');
  const budget = h('button', {
    type: 'button',
    class: 'button button-small',
    'aria-label': `Budget for ${label}`,
    onclick: () => openBudgetForm(view, key, budget),
  }, 'Budget');
  return h('div', { class: 'row-actions' }, edit, budget, revoke);
}

async function openCreateForm(view: TokensView, opener: HTMLElement): Promise<void> {
  const models = await modelNames(view);
  const form = createForm({
    submitLabel: 'Create token',
    secondary: [cancelButton(view.panel)],
    fields: [
      inputField({ name: 'name', label: 'Name', required: true, hint: 'Something to recognise it by, e.g. “laptop”.', attrs: { maxlength: 60, autocomplete: 'off' } }),
      inputField({ name: 'expires_at', label: 'Expiry date', type: 'date', hint: 'Optional. The token works through the end of this day (UTC).', attrs: { min: todayInputValue() } }),
      ...limitFields(models, undefined, view.organisation === null),
    ],
    async onSubmit(form) {
      const expiry = valueOf(form, 'expires_at');
      const limits = readLimits(form);
      const body = {
        name: valueOf(form, 'name'),
        ...(expiry ? { expires_at: endOfDayIso(expiry) } : {}),
        ...(limits.spend_limit !== null ? { spend_limit: limits.spend_limit } : {}),
        ...(limits.models !== null ? { models: limits.models } : {}),
        ...(limits.rate_limits !== null ? { rate_limits: limits.rate_limits } : {}),
        ...(limits.allowed_networks !== null ? { allowed_networks: limits.allowed_networks } : {}),
      };
      const created = await apiPost<{ key: ApiKey; secret: string }>(view.keysPath, body);
      showNewSecret(view, created.key, created.secret, snippetModels(await view.offered(), created.key), opener);
      void refreshList(view);
    },
  });
  view.panel.open('Add a token', form, opener);
}

function showNewSecret(view: TokensView, key: ApiKey, secret: string, models: ConnectModels, opener: HTMLElement): void {
  view.panel.open(`Token “${keyLabel(key)}” created`, h('div', null,
    secretReveal({ label: 'Secret key', secret, testId: 'new-key-secret' }),
    connectSection(secret, models),
    buttonRow(h('button', { type: 'button', class: 'button', onclick: () => view.panel.close() }, 'Done'))), opener);
  // Focus (and so select) the secret: ready to copy, and read out with its warning.
  view.panel.element.querySelector<HTMLInputElement>('[data-testid="new-key-secret"]')?.focus();
}

async function openEditForm(view: TokensView, key: ApiKey, opener: HTMLElement): Promise<void> {
  const models = await modelNames(view);
  const form = createForm({
    submitLabel: 'Save limits',
    secondary: [cancelButton(view.panel)],
    fields: limitFields(models, key),
    async onSubmit(form) {
      // Every limit is sent, so emptied fields clear (null) what was set before.
      const updated = await apiPatch<{ key: ApiKey }>(`${view.keysPath}/${encodeURIComponent(key.id)}`, readLimits(form));
      view.panel.close();
      view.status.show(`Limits of “${keyLabel(updated.key)}” saved.`, 'success');
      void refreshList(view);
    },
  });
  view.panel.open(`Edit limits: ${keyLabel(key)}`, form, opener);
}

function openBudgetForm(view: TokensView, key: ApiKey, opener: HTMLElement): void {
  const form = createForm({
    submitLabel: 'Save budget',
    secondary: [cancelButton(view.panel)],
    fields: [
      ...budgetFields(key.budget),
      ...(key.operator_limits?.budget
        ? [h('p', { class: 'hint', 'data-testid': 'operator-budget' }, `Set by the operator: ${describeBudget(key.operator_limits.budget)}. You can lower its amount, keeping its period and time zone; not raise or remove it.`)]
        : []),
    ],
    async onSubmit(form) {
      const budget = readBudget(form);
      const updated = await apiPatch<{ key: ApiKey }>(`${view.keysPath}/${encodeURIComponent(key.id)}`, { budget });
      view.panel.close();
      view.status.show(`Budget of “${keyLabel(updated.key)}” ${budget === null ? 'removed' : 'saved'}.`, 'success');
      refreshBudgets(view);
      void refreshList(view);
    },
  });
  view.panel.open(`Budget: ${keyLabel(key)}`, form, opener);
}

function refreshBudgets(view: TokensView): void {
  // The budgets' bars are the personal account's (an organisation's keys show theirs in the list).
  if (view.organisation !== null) return;
  const budgets = budgetsSection(view.context.signal, false);
  view.budgets.replaceWith(budgets);
  view.budgets = budgets;
}

async function revokeKey(view: TokensView, key: ApiKey): Promise<void> {
  const label = keyLabel(key);
  const confirmed = await confirmAction({
    title: `Revoke “${label}”?`,
    message: 'Programs using this token will be refused from now on. This cannot be undone.',
    confirmLabel: 'Revoke token',
  });
  if (!confirmed) return;
  try {
    await apiDelete<{ key: ApiKey }>(`${view.keysPath}/${encodeURIComponent(key.id)}`);
    view.status.show(`Token “${label}” revoked.`, 'success');
  } catch (error) {
    view.status.show(`Could not revoke “${label}”: ${errorMessage(error)}`, 'error');
  }
  void refreshList(view);
}

function cancelButton(panel: Panel): HTMLButtonElement {
  return h('button', { type: 'button', class: 'button', onclick: () => panel.close() }, 'Cancel');
}
