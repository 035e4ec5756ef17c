// /console/request?id=… — one request in full: what was asked and what served it,
// every token kind with the price applied, hold and charge, timings and session.
import { actingOrganisationLoaded, usageBase } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { h, type Child } from '../dom.js';
import { loadInto } from '../load.js';
import { formatExactMoney, isZero } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { UsageRequest } from '../types.js';
import { count, exactMoney, pageHeading, section, timeEl } from '../ui.js';
import { ratioText } from '../usage-range.js';

export const requestPage: Page = {
  title: 'Request',
  render(context: PageContext) {
    const id = context.query.get('id') ?? '';
    const body = h('div');
    context.root.append(pageHeading('Request', h('code', null, id)), body);
    // Acting for an organisation, one of its requests (the caller's own, or any member's for an owner or admin).
    void actingOrganisationLoaded().then((organisation) => loadInto(body,
      () => apiGet<{ request: UsageRequest }>(`${usageBase(organisation)}/requests/${encodeURIComponent(id)}`, { signal: context.signal }),
      (data) => requestDetail(data.request)));
  },
};

function facts(rows: ReadonlyArray<readonly [string, Child, string?]>): HTMLElement {
  return h('dl', { class: 'facts' }, rows.map(([term, value, testId]) =>
    h('div', { class: 'fact' }, h('dt', null, term), h('dd', { 'data-testid': testId ?? null }, value))));
}

const code = (text: string | null): Child => (text === null ? '—' : h('code', null, text));

function requestDetail(request: UsageRequest): HTMLElement {
  const overage = !isZero(request.overage) ? `${formatExactMoney(request.overage)} charged above the hold` : null;
  const unbilled = !isZero(request.unbilled) ? `${formatExactMoney(request.unbilled)} above the hold left uncharged` : null;
  return h('div', null,
    facts([
      ['Time', timeEl(request.created_at)],
      ['Cost', exactMoney(request.cost), 'request-cost'],
      ['Held before it ran', exactMoney(request.held), 'request-held'],
      ['Overage', overage ?? unbilled ?? 'none'],
      ['Usage source', request.usage_source],
      ['Status', `${request.status} (${request.outcome})`],
      ['Latency', request.latency_ms === null ? '—' : `${count(request.latency_ms)} ms`],
      ['Time to first byte', request.ttfb_ms === null ? '— (not streamed)' : `${count(request.ttfb_ms)} ms`],
    ]),
    section('What was asked, and what served it', facts([
      ['Model', code(request.model)],
      ['Asked for as', code(request.requested_model ?? request.model)],
      ['Served by', request.provider === null ? '—' : h('span', null, request.provider, ' as ', code(request.served_model))],
      ['Endpoint', code(request.endpoint)],
      ['Token', request.key_name ?? code(request.key_id)],
      ['Session', request.session_id === null ? '—' : h('a', { href: withQuery('/console/session', { id: request.session_id }) }, code(request.session_id))],
      ['Client request id', code(request.client_request_id)],
      ['User agent', code(request.user_agent)],
      ['Origin', request.origin ?? 'API'],
    ])),
    section('Attempts', dataTable({
      caption: 'Upstream attempts, in order',
      hideCaption: true,
      rows: request.attempts,
      emptyText: 'No provider was tried.',
      testId: 'request-attempts',
      columns: [
        { label: '#', cell: (_row) => String(request.attempts.indexOf(_row) + 1), numeric: true },
        { label: 'Provider', cell: (row) => row.provider },
        { label: 'Outcome', cell: (row) => (row.outcome === 'ok' ? 'answered' : `failed over: ${row.outcome}`) },
        { label: 'Time', cell: (row) => `${count(row.duration_ms)} ms`, numeric: true },
      ],
    })),
    section('Tokens and prices', dataTable({
      caption: 'Each token kind at the price applied',
      hideCaption: true,
      rows: request.lines,
      emptyText: 'No tokens.',
      testId: 'request-lines',
      columns: [
        { label: 'Kind', cell: (line) => line.kind.replace(/_tokens$/, '').replaceAll('_', ' ') },
        { label: 'Tokens', cell: (line) => count(line.tokens), numeric: true },
        { label: 'Price per 1M', cell: (line) => (request.priced ? exactMoney(line.price_per_million) : 'free'), numeric: true },
        { label: 'Cost', cell: (line) => exactMoney(line.cost), numeric: true },
      ],
    }),
    request.tool_lines.length === 0 ? null : dataTable({
      caption: 'Server-tool calls',
      rows: request.tool_lines,
      emptyText: 'None.',
      columns: [
        { label: 'Tool', cell: (line) => line.tool },
        { label: 'Calls', cell: (line) => count(line.calls), numeric: true },
        { label: 'Price per 1,000', cell: (line) => exactMoney(line.price_per_thousand), numeric: true },
        { label: 'Cost', cell: (line) => exactMoney(line.cost), numeric: true },
      ],
    }),
    request.image_lines.length === 0 ? null : dataTable({
      caption: 'Images, priced per image',
      rows: request.image_lines,
      emptyText: 'None.',
      testId: 'request-image-lines',
      columns: [
        { label: 'Size / quality', cell: (line) => h('code', null, line.size_quality) },
        { label: 'Images', cell: (line) => count(line.images), numeric: true },
        { label: 'Price per image', cell: (line) => exactMoney(line.price_per_image), numeric: true },
        { label: 'Cost', cell: (line) => exactMoney(line.cost), numeric: true },
      ],
    }),
    h('p', { class: 'muted' }, `The parts are exact; the charge is their sum rounded once to a billionth. Cache hits: ${ratioText(request.cache_hit_ratio)}.`)));
}
