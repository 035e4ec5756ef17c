// A session row's link to its page: a client's session by its id; the Playground's group (the API
// folds its turns, a session per visit, into one labelled row) by its name.
import { withQuery } from './api.js';
import { h } from './dom.js';
import type { UsageGroup } from './types.js';

/**
 * A labelled session row is the Playground's: the API folds its turns (a session per visit) into one
 * row, labelled, where a client's session is known by its id alone.
 */
export function isGroupOfSessions(row: UsageGroup): boolean {
  return row.label !== null;
}

/** Whose session a link opens: an administrator's chosen account, or an organisation's chosen member. */
export interface SessionScope {
  readonly account_id?: string;
  readonly member_id?: string;
}

/** A session's id, or the Playground's group by its name, opening its requests. */
export function sessionLink(row: UsageGroup, scope: SessionScope = {}): HTMLElement {
  const href = withQuery('/console/session', { id: row.group, account_id: scope.account_id, member_id: scope.member_id });
  return isGroupOfSessions(row)
    ? h('a', { href, 'data-testid': 'session-group' }, row.label, ' ', h('span', { class: 'muted' }, '(every visit)'))
    : h('a', { href }, h('code', null, row.group ?? ''));
}
