/**
 * Function tools, `tool_choice` and `parallel_tool_calls` as Messages `tools` and `tool_choice`.
 * Every name goes through the ToolNameMap, so a name Messages would refuse is rewritten here and
 * mapped back in the reply.
 */
import type { Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { invalid, isSet, requireArray, requireRecord, requireString } from './fields';

/** Reads one entry of the client's `tools` as a Messages tool; null when it sends nothing (a search allowed no uses). */
export type ToolReader = (value: unknown, param: string, toolNames: ToolNameMap) => Json | null;

/** The tool list to send; undefined when the client declared none. */
export function toolsFor(value: unknown, toolNames: ToolNameMap, readTool: ToolReader): Json[] | undefined {
  if (!isSet(value)) return undefined;
  const tools = requireArray(value, 'tools').flatMap((tool, i): Json[] => {
    const read = readTool(tool, `tools[${i}]`, toolNames);
    return read === null ? [] : [read];
  });
  return tools.length > 0 ? tools : undefined;
}

/**
 * A function declared as `name` with the `description` and `parameters` of `fn`, read from `param`.
 * `strict` is not sent: Messages validates tool input against input_schema on its own terms.
 */
export function functionTool(fn: Json, param: string, name: string, toolNames: ToolNameMap): Json {
  const declared: Json = { name: toolNames.upstream(name) };
  if (isSet(fn.description)) declared.description = requireString(fn.description, `${param}.description`);
  // Messages requires a schema; OpenAI's default for a function without one is "no arguments".
  declared.input_schema = isSet(fn.parameters) ? requireRecord(fn.parameters, `${param}.parameters`) : { type: 'object', properties: {} };
  return declared;
}

const CHOICE_BY_MODE: Readonly<Record<string, string>> = { auto: 'auto', required: 'any', none: 'none' };

/**
 * The client's own `tool_choice` as a Messages choice; `functionName` reads the name from a choice of
 * type 'function', whose shape differs between the OpenAI APIs.
 */
export function explicitChoice(value: unknown, toolNames: ToolNameMap, functionName: (choice: Json) => string): Json | undefined {
  if (!isSet(value)) return undefined;
  if (typeof value === 'string') {
    const type = CHOICE_BY_MODE[value];
    if (type === undefined) throw invalid('tool_choice', "must be 'auto', 'required', 'none' or a function to call.");
    return { type };
  }
  const choice = requireRecord(value, 'tool_choice');
  if (choice.type === 'function') return { type: 'tool', name: toolNames.upstream(functionName(choice)) };
  // allowed_tools narrows the declared tools per request, hosted choices pick OpenAI's own tools:
  // Messages can only force one function or allow all.
  throw invalid('tool_choice', `of type '${String(choice.type)}' cannot be expressed for this model; use 'auto', 'required', 'none' or a function.`);
}

/** `parallel_tool_calls`, checked; undefined when the client did not set it. */
export function parallelToolCalls(body: Readonly<Json>): boolean | undefined {
  const parallel = body.parallel_tool_calls;
  if (isSet(parallel) && typeof parallel !== 'boolean') throw invalid('parallel_tool_calls', 'must be true or false.');
  return typeof parallel === 'boolean' ? parallel : undefined;
}

/**
 * `parallel_tool_calls: false` has no Messages field of its own: it rides on the choice as
 * `disable_parallel_tool_use`, creating an `auto` choice when the client set none, and is moot when
 * tools are off.
 */
export function withParallelDisabled(choice: Json | undefined): Json {
  if (choice?.type === 'none') return choice;
  return { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
}

/** Whether a Messages choice makes the model call a tool. */
export function forcesToolCall(choice: Json | undefined): boolean {
  return choice?.type === 'any' || choice?.type === 'tool';
}

/** Messages thinks only when the model may choose whether to call a tool; `effortParam` asked it to think. */
export function rejectForcedTool(toolChoice: Json | undefined, effortParam: string): void {
  if (forcesToolCall(toolChoice)) {
    throw invalid('tool_choice', `cannot force a tool call while ${effortParam} is set; use 'auto' or drop ${effortParam}.`);
  }
}
