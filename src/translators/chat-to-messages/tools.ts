/**
 * Chat `tools`, `tool_choice` and `parallel_tool_calls`, where each function sits under a `function`
 * key; the Messages side of the mapping is in `to-messages/tools`.
 */
import type { Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { invalid, requireRecord, requireString } from '../to-messages/fields';
import { explicitChoice, functionTool, parallelToolCalls, toolsFor as messagesTools, withParallelDisabled } from '../to-messages/tools';

/** The tool list to send; undefined when the client declared none. */
export function toolsFor(value: unknown, toolNames: ToolNameMap): Json[] | undefined {
  return messagesTools(value, toolNames, toolFor);
}

function toolFor(value: unknown, param: string, toolNames: ToolNameMap): Json {
  const tool = requireRecord(value, param);
  if (tool.type !== 'function') {
    throw invalid(`${param}.type`, `'${String(tool.type)}' tools cannot be sent to this model; declare a 'function' tool with a JSON Schema.`);
  }
  const fn = requireRecord(tool.function, `${param}.function`);
  return functionTool(fn, `${param}.function`, requireString(fn.name, `${param}.function.name`), toolNames);
}

/**
 * The Messages tool_choice. `parallel_tool_calls: false` creates an `auto` choice only beside tools
 * (a choice without tools means nothing); a choice the client set itself is sent even without tools.
 */
export function toolChoiceFor(body: Readonly<Json>, toolNames: ToolNameMap, hasTools: boolean): Json | undefined {
  const choice = explicitChoice(body.tool_choice, toolNames, functionName);
  if (parallelToolCalls(body) !== false) return choice;
  if (choice === undefined && !hasTools) return undefined;
  return withParallelDisabled(choice);
}

function functionName(choice: Json): string {
  return requireString(requireRecord(choice.function, 'tool_choice.function').name, 'tool_choice.function.name');
}
