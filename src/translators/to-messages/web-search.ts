/**
 * OpenAI's hosted web search (a Responses `web_search` tool, chat `web_search_options`) as Anthropic's
 * web search server tool, which Claude runs on Anthropic's side and Anthropic bills per search
 * (docs/api.md#web-search-on-claude-models). What both sides can say is mapped: the allowed domains and
 * the user's approximate location. `search_context_size` and `external_web_access` tune OpenAI's own
 * search service and have no counterpart; they are not sent.
 */
import type { Json } from '../../json';
import { invalid, isSet, requireArray, requireRecord, requireString, withoutUndefined } from './fields';

const WEB_SEARCH_TOOL_TYPE = 'web_search_20250305';
const LOCATION_FIELDS = ['city', 'region', 'country', 'timezone'] as const;

/** What a client asked of its search, in neutral terms. */
export interface WebSearchOptions {
  readonly allowedDomains?: readonly string[];
  /** An approximate location; its fields as OpenAI names them (city, region, country, timezone). */
  readonly location?: Json;
  /** The location's own parameter, for errors. */
  readonly locationParam?: string;
}

/** The server tool declaration: at most `maxUses` searches in this answer. */
export function webSearchTool(options: WebSearchOptions, maxUses: number): Json {
  return withoutUndefined({
    type: WEB_SEARCH_TOOL_TYPE,
    name: 'web_search',
    max_uses: maxUses,
    allowed_domains: options.allowedDomains !== undefined && options.allowedDomains.length > 0 ? [...options.allowedDomains] : undefined,
    user_location: options.location === undefined ? undefined : userLocation(options.location, options.locationParam ?? 'user_location'),
  });
}

/** `allowed_domains`, checked: a list of domain names. */
export function domainList(value: unknown, param: string): string[] | undefined {
  if (!isSet(value)) return undefined;
  return requireArray(value, param).map((domain, i) => requireString(domain, `${param}[${i}]`));
}

/** An approximate location with the fields the client set (null means not set). */
function userLocation(value: Json, param: string): Json | undefined {
  if (isSet(value.type) && value.type !== 'approximate') throw invalid(`${param}.type`, "must be 'approximate'.");
  const location: Json = { type: 'approximate' };
  for (const field of LOCATION_FIELDS) {
    if (isSet(value[field])) location[field] = requireString(value[field], `${param}.${field}`);
  }
  return Object.keys(location).length > 1 ? location : undefined;
}

/** The searches a translated request may run: its own cap when it set one, else the gateway's setting. */
export function searchUses(cap: unknown, param: string, configured: number): number {
  if (!isSet(cap)) return configured;
  if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 0) throw invalid(param, 'must be a non-negative integer.');
  return cap;
}

/** A location object read from `param`, or undefined when the client sent none. */
export function locationAt(value: unknown, param: string): Json | undefined {
  return isSet(value) ? requireRecord(value, param) : undefined;
}
