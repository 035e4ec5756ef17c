// The range and scope an analytics page reads: today, the last 7 or 30 days, or
// chosen days (UTC), for administrators which account, and acting for an
// organisation one owns or administers, which member. Kept in the URL, so a view
// can be reloaded and shared.
import { managesMembers } from './acting.js';
import { apiGet } from './api.js';
import { createForm, inputField, selectField, valueOf } from './forms.js';
import { isAdmin } from './session.js';
import type { AdminAccount, DailyUsage, Member, Organisation, UsageGroup } from './types.js';

export const RANGES = [
  { value: '1', label: 'Today' },
  { value: '7', label: 'Last 7 days' },
  { value: '30', label: 'Last 30 days' },
  { value: 'custom', label: 'Chosen days' },
] as const;

export interface RangeChoice {
  /** A number of days ending today, or `custom` with `since`/`until` days. */
  range: string;
  since?: string;
  until?: string;
  /** Administrators: an account id, `all`, or none for their own. */
  account_id?: string;
  /** Acting for an organisation as its owner or admin: one member's account id, or none for every member. */
  member_id?: string;
}

const SCOPES = ['since', 'until', 'account_id', 'member_id'] as const;

const DAY_MS = 86_400_000;

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function rangeFrom(query: URLSearchParams, fallback = '30'): RangeChoice {
  const range = query.get('range') ?? fallback;
  const choice: RangeChoice = { range: RANGES.some((r) => r.value === range) ? range : fallback };
  for (const name of SCOPES) {
    const value = query.get(name);
    if (value) choice[name] = value;
  }
  return choice;
}

/** The query the API takes: `since`/`until` as UTC days (a bare `until` day means its end). */
export function rangeQuery(choice: RangeChoice): Record<string, string | undefined> {
  if (choice.range === 'custom') return { since: choice.since, until: choice.until, account_id: choice.account_id, member_id: choice.member_id };
  const days = Number(choice.range);
  return { since: utcDay(Date.now() - (days - 1) * DAY_MS), account_id: choice.account_id, member_id: choice.member_id };
}

export function choiceQuery(choice: RangeChoice): URLSearchParams {
  const query = new URLSearchParams({ range: choice.range });
  if (choice.range === 'custom') {
    if (choice.since) query.set('since', choice.since);
    if (choice.until) query.set('until', choice.until);
  }
  if (choice.account_id) query.set('account_id', choice.account_id);
  if (choice.member_id) query.set('member_id', choice.member_id);
  return query;
}

/** The days of the range, oldest first, each with its figures or zeros: a chart shows quiet days too. */
export function everyDay(choice: RangeChoice, rows: readonly UsageGroup[]): DailyUsage[] {
  const query = rangeQuery(choice);
  const first = Date.parse(`${query.since ?? utcDay(Date.now() - 29 * DAY_MS)}T00:00:00Z`);
  const last = Date.parse(`${query.until ?? utcDay(Date.now())}T00:00:00Z`);
  const byDay = new Map(rows.map((row) => [row.group ?? '', row]));
  const days: DailyUsage[] = [];
  for (let at = first; at <= last && days.length < 400; at += DAY_MS) {
    const day = utcDay(at);
    const row = byDay.get(day);
    days.push({ day, requests: row?.requests ?? 0, cost: row?.cost ?? '0' });
  }
  return days;
}

/** The organisation's members, to pick one from, when the caller reads every member's usage; else null. */
export function membersToPick(organisation: Organisation | null, signal: AbortSignal): Promise<Member[] | null> {
  if (!managesMembers(organisation)) return Promise.resolve(null);
  return apiGet<{ members: Member[] }>(`/api/orgs/${encodeURIComponent(organisation!.id)}/members`, { signal }).then((data) => data.members, () => null);
}

/** A member select's options: every member (the empty value), then each by name. */
export function memberOptions(members: readonly Member[]): Array<{ value: string; label: string }> {
  return [{ value: '', label: 'Every member' }, ...members.map((member) => ({ value: member.account_id, label: member.name }))];
}

/**
 * The form that picks a range; for administrators acting for themselves an account, and for an
 * organisation's owner or admin a member (a member of it reads only their own, so is offered none).
 */
export async function rangeForm(current: RangeChoice, signal: AbortSignal, apply: (choice: RangeChoice) => void, organisation: Organisation | null = null): Promise<HTMLFormElement> {
  const [accounts, members] = await Promise.all([
    isAdmin() && organisation === null
      ? apiGet<{ accounts: AdminAccount[] }>('/api/admin/accounts', { signal }).then((data) => data.accounts, () => null)
      : Promise.resolve(null),
    membersToPick(organisation, signal),
  ]);
  return createForm({
    label: 'Choose the range',
    className: 'form filters',
    submitLabel: 'Show',
    fields: [
      selectField({ name: 'range', label: 'Range', value: current.range, options: RANGES.map((r) => ({ value: r.value, label: r.label })) }),
      inputField({ name: 'since', label: 'From (UTC, chosen days)', type: 'date', value: current.since ?? '' }),
      inputField({ name: 'until', label: 'Until (UTC, chosen days)', type: 'date', value: current.until ?? '' }),
      accounts ? selectField({
        name: 'account_id',
        label: 'Account',
        value: current.account_id ?? '',
        options: [{ value: '', label: 'My account' }, { value: 'all', label: 'All accounts' }, ...accounts.map((a) => ({ value: a.id, label: a.name }))],
      }) : null,
      members ? selectField({ name: 'member_id', label: 'Member', value: current.member_id ?? '', options: memberOptions(members) }) : null,
    ],
    async onSubmit(form) {
      const choice: RangeChoice = { range: valueOf(form, 'range') || '30' };
      for (const name of SCOPES) {
        const value = valueOf(form, name);
        if (value) choice[name] = value;
      }
      apply(choice);
    },
  });
}

/** Cache reads over input-side tokens, as a percentage; a dash without input. */
export function ratioText(ratio: number | null): string {
  return ratio === null ? '—' : `${(ratio * 100).toFixed(1)}%`;
}
