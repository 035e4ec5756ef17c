/** `tollgate models search TEXT`: the catalog's models whose id or name contains TEXT, with their facts. */
import { searchCatalog } from '../catalog/catalog';
import { describeSource, PRICES_SOURCE } from '../catalog/sources';
import { formatTable } from './table';

export function runModelsSearch(text: string, out: (line: string) => void): number {
  const found = searchCatalog(text);
  if (found.length === 0) {
    out(`no catalog model matches "${text}" (catalog: ${describeSource(PRICES_SOURCE)})`);
    return 0;
  }
  const rows = found.map((model) => [
    model.provider,
    model.id,
    model.contextWindow === null ? '-' : String(model.contextWindow),
    model.maxOutputTokens === null ? '-' : String(model.maxOutputTokens),
    model.price?.input === undefined ? '-' : String(model.price.input),
    model.price?.output === undefined ? '-' : String(model.price.output),
    model.priceDate,
    model.deprecated ? 'deprecated' : '',
  ]);
  for (const line of formatTable([['PROVIDER', 'MODEL', 'CONTEXT', 'MAX OUTPUT', 'INPUT/1M', 'OUTPUT/1M', 'PRICED', ''], ...rows])) out(line);
  return 0;
}
