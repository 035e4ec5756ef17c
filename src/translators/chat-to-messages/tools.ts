/**
 * Chat `tools`, `tool_choice` and `parallel_tool_calls` as Messages `tools` and `tool_choice`. Every
 * name goes through the ToolNameMap, so a name Messages would refuse is rewritten here and mapped back
 * in the reply.
 */
import type { ToolNameMap } from '../tool-names';
import { invalid, isSet, requireArray, requireRecord, requireString, type Json } from './fields';

/** The tool list to send; undefined when the client declared none. */
export function toolsFor(value: unknown, toolNames: ToolNameMap): Json[] | undefined {
  if (!isSet(value)) return undefined;
  const tools = requireArray(value, 'tools').map((tool, i) => toolFor(tool, `tools[${i}]`, toolNames));
  return tools.length > 0 ? tools : undefined;
}

function toolFor(value: unknown, param: string, toolNames: ToolNameMap): Json {
  const tool = requireRecord(value, param);
  if (tool.type !== 'function') {
    throw invalid(`${param}.type`, `'${String(tool.type)}' tools cannot be sent to this model; declare a 'function' tool with a JSON Schema.`);
  }
  const fn = requireRecord(tool.function, `${param}.function`);
  const name = requireString(fn.name, `${param}.function.name`);
  // `strict` is not sent: Messages validates tool input against input_schema on its own terms.
  const declared: Json = { name: toolNames.upstream(name) };
  if (isSet(fn.description)) declared.description = requireString(fn.description, `${param}.function.description`);
  // Messages requires a schema; OpenAI's default for a function without one is "no arguments".
  declared.input_schema = isSet(fn.parameters) ? requireRecord(fn.parameters, `${param}.function.parameters`) : { type: 'object', properties: {} };
  return declared;
}

/**
 * The Messages tool_choice. `parallel_tool_calls: false` has no field of its own there: it rides on
 * the choice as `disable_parallel_tool_use`, so it creates an `auto` choice when the client set none
 * (only beside tools: a choice without tools means nothing) and is moot when tools are off.
 */
export function toolChoiceFor(body: Readonly<Json>, toolNames: ToolNameMap, hasTools: boolean): Json | undefined {
  let choice = explicitChoice(body.tool_choice, toolNames);
  const parallel = body.parallel_tool_calls;
  if (isSet(parallel) && typeof parallel !== 'boolean') throw invalid('parallel_tool_calls', 'must be true or false.');
  if (parallel !== false) return choice;
  if (choice === undefined && hasTools) choice = { type: 'auto' };
  if (choice === undefined || choice.type === 'none') return choice;
  return { ...choice, disable_parallel_tool_use: true };
}

const CHOICE_BY_MODE: Readonly<Record<string, string>> = { auto: 'auto', required: 'any', none: 'none' };

function explicitChoice(value: unknown, toolNames: ToolNameMap): Json | undefined {
  if (!isSet(value)) return undefined;
  if (typeof value === 'string') {
    const type = CHOICE_BY_MODE[value];
    if (type === undefined) throw invalid('tool_choice', "must be 'auto', 'required', 'none' or a function to call.");
    return { type };
  }
  const choice = requireRecord(value, 'tool_choice');
  if (choice.type === 'function') {
    const name = requireString(requireRecord(choice.function, 'tool_choice.function').name, 'tool_choice.function.name');
    return { type: 'tool', name: toolNames.upstream(name) };
  }
  // allowed_tools narrows the declared tools per request; Messages can only force one or allow all.
  throw invalid('tool_choice', `of type '${String(choice.type)}' cannot be expressed for this model; use 'auto', 'required', 'none' or a function.`);
}
