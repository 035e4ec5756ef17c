/**
 * Responses `tools`, `tool_choice` and `parallel_tool_calls`, where a function tool is declared flat
 * (name and parameters beside its type); the Messages side of the mapping is in `to-messages/tools`.
 */
import { isObject, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { joinNamespace } from '../../protocols/openai-responses/namespaced-name';
import { invalid, isSet, requireNonEmptyString, requireArray, requireRecord } from '../to-messages/fields';
import { explicitChoice, forcesToolCall, functionTool, parallelToolCalls, toolsFor as messagesTools, withParallelDisabled } from '../to-messages/tools';
import { domainList, locationAt, searchUses, webSearchTool } from '../to-messages/web-search';

/** The hosted web search tool's types, versions and previews alike. */
const WEB_SEARCH_TYPES: ReadonlySet<unknown> = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11']);

/**
 * The tool list to send; undefined when the client declared none. A hosted web search may run
 * `max_tool_calls` searches (which caps every hosted tool call, and only searches reach Claude), else
 * `configuredUses`; with none allowed it is not sent.
 */
export function toolsFor(body: Readonly<Json>, toolNames: ToolNameMap, configuredUses: number): Json[] | undefined {
  const value = body.tools;
  const uses = searchUses(body.max_tool_calls, 'max_tool_calls', configuredUses);
  let searches = 0;
  return messagesTools(isSet(value) ? flattenNamespaces(requireArray(value, 'tools')) : value, toolNames, (tool, param, names) => {
    if (!isObject(tool) || !WEB_SEARCH_TYPES.has(tool.type)) return toolFor(tool, param, names);
    if (++searches > 1) throw invalid(param, 'declares a second web search tool; declare it once.');
    return uses === 0 ? null : webSearchFor(tool, param, uses);
  });
}

/** A hosted web search as Claude's own: its allowed domains and the user's location carry over. */
function webSearchFor(tool: Json, param: string, uses: number): Json {
  const filters = isSet(tool.filters) ? requireRecord(tool.filters, `${param}.filters`) : {};
  return webSearchTool(
    {
      allowedDomains: domainList(filters.allowed_domains, `${param}.filters.allowed_domains`),
      location: locationAt(tool.user_location, `${param}.user_location`),
      locationParam: `${param}.user_location`,
    },
    uses,
  );
}

/**
 * A `namespace` tool groups functions (Codex CLI sends its tools so); Messages has no groups, so each
 * function becomes a tool of its own under a flat name the reply splits back into name and namespace.
 */
function flattenNamespaces(tools: readonly unknown[]): unknown[] {
  return tools.flatMap((value, i) => {
    if (!isObject(value) || value.type !== 'namespace') return [value];
    const namespace = requireNonEmptyString(value.name, `tools[${i}].name`);
    return requireArray(value.tools, `tools[${i}].tools`).map((inner, j) => {
      const fn = requireRecord(inner, `tools[${i}].tools[${j}]`);
      return { ...fn, name: joinNamespace(namespace, requireNonEmptyString(fn.name, `tools[${i}].tools[${j}].name`)) };
    });
  });
}

function toolFor(value: unknown, param: string, toolNames: ToolNameMap): Json {
  const tool = requireRecord(value, param);
  if (tool.type !== 'function') {
    // Hosted tools other than web search (file_search, code_interpreter, …) run inside OpenAI's service.
    throw invalid(param, `is a '${String(tool.type)}' tool, which this model cannot run; only 'function' and 'web_search' tools can be sent to it.`);
  }
  return functionTool(tool, param, requireNonEmptyString(tool.name, `${param}.name`), toolNames);
}

/**
 * The Messages tool_choice. Without tools a choice means nothing and is left out (Responses clients
 * send `auto` out of habit), unless it demands a call that cannot happen.
 */
export function toolChoiceFor(body: Readonly<Json>, toolNames: ToolNameMap, hasTools: boolean): Json | undefined {
  const parallel = parallelToolCalls(body);
  const choice = explicitChoice(body.tool_choice, toolNames, (fn) => requireNonEmptyString(fn.name, 'tool_choice.name'));
  if (!hasTools) {
    if (forcesToolCall(choice)) throw invalid('tool_choice', 'requires a call, but tools declares no function to call.');
    return undefined;
  }
  if (parallel !== false) return choice;
  return withParallelDisabled(choice);
}
