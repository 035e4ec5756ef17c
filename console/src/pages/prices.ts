// /console/prices — the public price list; works signed out.
import { apiGet } from '../api.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { ModelPrice, PricedModel } from '../types.js';
import { count, money, pageHeading } from '../ui.js';

export const pricesPage: Page = {
  title: 'Prices',
  public: true,
  render(context: PageContext) {
    const list = h('div');
    context.root.append(
      pageHeading('Prices', 'Prices are in balance units per 1 million tokens.'),
      list);
    void loadInto(list, () => apiGet<{ models: PricedModel[] }>('/api/prices', { signal: context.signal }),
      (data) => priceTable(data.models));
  },
};

function priceCell(model: PricedModel, part: keyof ModelPrice) {
  if (model.free) return 'Free';
  return model.price ? money(model.price[part]) : '—';
}

function priceTable(models: readonly PricedModel[]): HTMLElement {
  return dataTable({
    caption: 'Models and prices per 1 million tokens',
    rows: models,
    emptyText: 'No models are configured.',
    testId: 'price-table',
    columns: [
      { label: 'Model', cell: (model) => h('code', null, model.model) },
      { label: 'Family', cell: (model) => model.family },
      { label: 'Input', cell: (model) => priceCell(model, 'input'), numeric: true },
      { label: 'Cache write', cell: (model) => priceCell(model, 'cache_write'), numeric: true },
      { label: 'Cache hit', cell: (model) => priceCell(model, 'cache_hit'), numeric: true },
      { label: 'Output', cell: (model) => priceCell(model, 'output'), numeric: true },
      { label: 'Max output tokens', cell: (model) => count(model.max_output_tokens), numeric: true },
      { label: 'Description', cell: (model) => model.description ?? '' },
    ],
  });
}
