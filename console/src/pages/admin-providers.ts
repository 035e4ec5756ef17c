// /console/admin/providers — circuit-breaker state and recent error rate per upstream; a provider
// without credentials says "not configured" instead.
import { apiGet } from '../api.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { statusLine } from '../status.js';
import { dataTable } from '../table.js';
import type { ProviderHealth } from '../types.js';
import { badge, buttonRow, count, pageHeading, type BadgeTone } from '../ui.js';

const BREAKER: Record<ProviderHealth['breaker'], { text: string; tone: BadgeTone }> = {
  closed: { text: 'closed (healthy)', tone: 'good' },
  half_open: { text: 'half-open (testing)', tone: 'warn' },
  open: { text: 'open (failing over)', tone: 'bad' },
};

export const adminProvidersPage: Page = {
  title: 'Providers',
  admin: true,
  render(context: PageContext) {
    const list = h('div');
    const status = statusLine();
    const refresh = async () => {
      status.clear();
      const loaded = await loadInto(list,
        () => apiGet<{ providers: ProviderHealth[] }>('/api/admin/providers', { signal: context.signal }),
        (data) => providerTable(data.providers));
      if (loaded) status.show(`Updated at ${new Date().toLocaleTimeString()}.`);
    };
    context.root.append(
      pageHeading('Providers', 'Upstream health as the gateway sees it right now.'),
      buttonRow(h('button', { type: 'button', class: 'button', onclick: () => void refresh() }, 'Refresh')),
      status.element,
      list);
    void refresh();
  },
};

function errorRate(rate: number): string {
  return `${(rate * 100).toFixed(1)} %`;
}

function providerTable(providers: readonly ProviderHealth[]): HTMLElement {
  return dataTable({
    caption: 'Providers',
    hideCaption: true,
    rows: providers,
    emptyText: 'No providers are configured.',
    testId: 'providers-table',
    columns: [
      { label: 'Provider', cell: (provider) => provider.name },
      { label: 'Protocol', cell: (provider) => provider.protocol },
      { label: 'Breaker', cell: (provider) => {
        // A provider without a key is never called, so its breaker is closed without being healthy.
        if (!provider.configured) return badge('not configured (no key)', 'neutral');
        const state = BREAKER[provider.breaker] ?? { text: provider.breaker, tone: 'neutral' as const };
        return badge(state.text, state.tone);
      } },
      { label: 'Window', cell: (provider) => `${count(provider.window_seconds)} s`, numeric: true },
      { label: 'Requests', cell: (provider) => count(provider.requests), numeric: true },
      { label: 'Failures', cell: (provider) => count(provider.failures), numeric: true },
      { label: 'Error rate', cell: (provider) => errorRate(provider.error_rate), numeric: true },
    ],
  });
}
