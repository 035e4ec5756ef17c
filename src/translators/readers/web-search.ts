/**
 * What Anthropic's web search server tool leaves in a reply, read into neutral terms: the query of a
 * `server_tool_use` block, the pages (or the error) of its `web_search_tool_result`, and the
 * `web_search_result_location` citations of a text block. Other server tools are never requested.
 */
import { isObject, stringField, tryParse, type Json } from '../../json';
import type { WebSource } from '../../protocols/turn';

/** The server tool a translated request declares. */
export const WEB_SEARCH_TOOL_NAME = 'web_search';

/** The query a search's input (an object, or its streamed JSON text) asks for; '' when unreadable. */
export function searchQuery(input: unknown): string {
  const value = typeof input === 'string' ? tryParse(input) : input;
  return isObject(value) && typeof value.query === 'string' ? value.query : '';
}

/** A `web_search_tool_result` block's content: its pages, or its error code. */
export function searchOutcome(content: unknown): { sources: WebSource[]; error: string | null } {
  if (Array.isArray(content)) {
    const sources = content.filter((entry): entry is Json => isObject(entry) && entry.type === 'web_search_result').map(sourceOf);
    return { sources, error: null };
  }
  const code = isObject(content) ? stringField(content.error_code) : '';
  return { sources: [], error: code === '' ? 'unavailable' : code };
}

/** The distinct pages a text block's citations point to, in order. */
export function citedSources(citations: unknown): WebSource[] {
  if (!Array.isArray(citations)) return [];
  const sources: WebSource[] = [];
  for (const citation of citations) {
    const source = citedSource(citation);
    if (source !== null && !sources.some((seen) => seen.url === source.url)) sources.push(source);
  }
  return sources;
}

/** A `web_search_result_location` citation's page; null for citations of other kinds. */
export function citedSource(citation: unknown): WebSource | null {
  if (!isObject(citation) || citation.type !== 'web_search_result_location' || typeof citation.url !== 'string') return null;
  return sourceOf(citation);
}

function sourceOf(entry: Json): WebSource {
  return { url: stringField(entry.url), title: typeof entry.title === 'string' ? entry.title : null };
}
