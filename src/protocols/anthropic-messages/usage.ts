/**
 * Usage of a Messages exchange. Anthropic's `input_tokens` already excludes cache reads and writes
 * (docs/protocols.md#messages-reply), which is the neutral form. Cache writes are split by lifetime from
 * `cache_creation` (1-hour writes cost more than 5-minute ones), and server-tool calls billed per call come
 * from `server_tool_use` (`web_search_requests` → `web_search`). In streams, `message_start` carries the
 * input side and `message_delta` cumulative totals that overwrite, never add
 * (docs/protocols.md#messages-stream).
 */
import { tryParse } from '../../json';
import { count, field, readUsage } from '../usage-json';
import type { ToolCalls, UsageCounts } from '../types';

const REQUESTS_SUFFIX = '_requests';

/**
 * Neutral counts from an Anthropic `usage` object; fields it lacks keep the values of `base`. Null
 * when a count in it is unreadable.
 */
export function messagesUsage(usage: Record<string, unknown>, base?: UsageCounts): UsageCounts | null {
  return readUsage(() => {
    const pick = (key: string, fallback: number) => (key in usage ? count(usage[key]) : fallback);
    const writes = cacheWrites(usage, base);
    return {
      inputTokens: pick('input_tokens', base?.inputTokens ?? 0),
      cacheWriteTokens: writes.fiveMinutes,
      cacheWrite1hTokens: writes.oneHour,
      cacheReadTokens: pick('cache_read_input_tokens', base?.cacheReadTokens ?? 0),
      outputTokens: pick('output_tokens', base?.outputTokens ?? 0),
      imageInputTokens: 0,
      imageOutputTokens: 0,
      toolCalls: 'server_tool_use' in usage ? serverToolCalls(field(usage, 'server_tool_use')) : (base?.toolCalls ?? {}),
      ...servedTier(usage, base),
    };
  });
}

/**
 * The tier the usage reports: fast mode (`speed: "fast"`) is priced as its own tier; otherwise
 * `service_tier` (`standard`, `priority`, `batch`). A stream's later usage that names none keeps the first's.
 */
function servedTier(usage: Record<string, unknown>, base?: UsageCounts): { servedTier?: string } {
  if (usage.speed === 'fast') return { servedTier: 'fast' };
  if (typeof usage.service_tier === 'string') return { servedTier: usage.service_tier };
  return base?.servedTier === undefined ? {} : { servedTier: base.servedTier };
}

/** 5-minute and 1-hour cache writes; a total beyond the split (or without one) counts as 5-minute. */
function cacheWrites(usage: Record<string, unknown>, base?: UsageCounts): { fiveMinutes: number; oneHour: number } {
  const split = field(usage, 'cache_creation');
  const hasTotal = 'cache_creation_input_tokens' in usage;
  if (Object.keys(split).length === 0) {
    return hasTotal
      ? { fiveMinutes: count(usage.cache_creation_input_tokens), oneHour: 0 }
      : { fiveMinutes: base?.cacheWriteTokens ?? 0, oneHour: base?.cacheWrite1hTokens ?? 0 };
  }
  const oneHour = count(split.ephemeral_1h_input_tokens);
  const fiveMinutes = count(split.ephemeral_5m_input_tokens);
  const total = hasTotal ? count(usage.cache_creation_input_tokens) : fiveMinutes + oneHour;
  return { fiveMinutes: Math.max(fiveMinutes, total - oneHour), oneHour };
}

/** `{web_search_requests: 2}` → `{web_search: 2}`; zero counts are left out. */
function serverToolCalls(use: Record<string, unknown>): ToolCalls {
  const calls: Record<string, number> = {};
  for (const [key, value] of Object.entries(use)) {
    if (!key.endsWith(REQUESTS_SUFFIX)) continue;
    const n = count(value);
    if (n > 0) calls[key.slice(0, -REQUESTS_SUFFIX.length)] = n;
  }
  return calls;
}

/** Folds one stream event into the usage seen so far; events other than start and delta change nothing. */
export function messagesUsageFromEvent(event: string | null, data: string, sofar: UsageCounts | null): UsageCounts | null {
  if (event !== 'message_start' && event !== 'message_delta') return sofar;
  const parsed = tryParse(data);
  const usage = event === 'message_start' ? field(field(parsed, 'message'), 'usage') : field(parsed, 'usage');
  return Object.keys(usage).length === 0 ? sofar : messagesUsage(usage, sofar ?? undefined);
}
