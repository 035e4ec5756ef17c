/**
 * Responses `tools`, `tool_choice` and `parallel_tool_calls`, where a function tool is declared flat
 * (name and parameters beside its type); the Messages side of the mapping is in `to-messages/tools`.
 */
import { isObject, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { joinNamespace } from '../../protocols/openai-responses/namespaced-name';
import { invalid, isSet, requireNonEmptyString, requireArray, requireRecord } from '../to-messages/fields';
import { explicitChoice, forcesToolCall, functionTool, parallelToolCalls, toolsFor as messagesTools, withParallelDisabled } from '../to-messages/tools';

/** The tool list to send; undefined when the client declared none. */
export function toolsFor(value: unknown, toolNames: ToolNameMap): Json[] | undefined {
  return messagesTools(isSet(value) ? flattenNamespaces(requireArray(value, 'tools')) : value, toolNames, toolFor);
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
    // Hosted tools (web_search, file_search, code_interpreter, …) run inside OpenAI's service.
    throw invalid(param, `is a '${String(tool.type)}' tool, which this model cannot run; only 'function' tools can be sent to it.`);
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
