// /console/prices — the public price list; works signed out. A model none of whose providers is
// configured is marked unavailable (it would answer 503).
import { apiGet } from '../api.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import { currency, formatExactMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { ModelPrice, PricedModel } from '../types.js';
import { badge, count, exactMoney, pageHeading } from '../ui.js';

export const pricesPage: Page = {
  title: 'Prices',
  public: true,
  render(context: PageContext) {
    const list = h('div');
    context.root.append(
      pageHeading('Prices', `Prices are in ${currency()} per 1 million tokens (the exact figure on hover).`),
      list);
    void loadInto(list, () => apiGet<{ models: PricedModel[] }>('/api/prices', { signal: context.signal }),
      (data) => priceTable(data.models));
  },
};

function priceCell(model: PricedModel, part: Exclude<keyof ModelPrice, 'per_image'>) {
  if (model.free) return 'Free';
  return model.price ? exactMoney(model.price[part]) : '—';
}

/** An image model's image prices: per 1M image tokens, or per image by size and quality. */
function imageCell(model: PricedModel) {
  const price = model.price;
  if (model.free || price === null) return model.free ? 'Free' : '—';
  const perImage = Object.entries(price.per_image);
  if (perImage.length > 0) return perImage.map(([key, units]) => `${key} ${formatExactMoney(units)}`).join(', ');
  if (price.image_input === '0' && price.image_output === '0') return '—';
  return `in ${formatExactMoney(price.image_input)}, out ${formatExactMoney(price.image_output)}`;
}

function priceTable(models: readonly PricedModel[]): HTMLElement {
  return dataTable({
    caption: 'Models and prices per 1 million tokens',
    rows: models,
    emptyText: 'No models are configured.',
    testId: 'price-table',
    rowClass: (model) => (model.available ? null : 'row-unavailable'),
    columns: [
      { label: 'Model', cell: (model) => model.available
        ? h('code', null, model.model)
        : h('span', null, h('code', null, model.model), ' ', badge('unavailable', 'neutral')) },
      { label: 'Family', cell: (model) => model.family },
      { label: 'Input', cell: (model) => priceCell(model, 'input'), numeric: true },
      { label: 'Cache write', cell: (model) => priceCell(model, 'cache_write'), numeric: true },
      { label: 'Cache hit', cell: (model) => priceCell(model, 'cache_hit'), numeric: true },
      { label: 'Output', cell: (model) => priceCell(model, 'output'), numeric: true },
      { label: 'Images', cell: (model) => imageCell(model) },
      { label: 'Max output tokens', cell: (model) => count(model.max_output_tokens), numeric: true },
      { label: 'Description', cell: (model) => model.available ? model.description ?? '' : `No provider of this model is configured, so it cannot answer yet.${model.description ? ` ${model.description}` : ''}` },
    ],
  });
}
