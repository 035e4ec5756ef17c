/** Messages tool definitions and `tool_choice` as chat function tools. */
import { object, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { invalid, isAbsent } from './fields';

/** `tools`, `tool_choice` and `parallel_tool_calls` for the chat request. */
export function toolFields(body: Json, toolNames: ToolNameMap): Json {
  const declared = Array.isArray(body.tools) ? body.tools.map(object) : [];
  const tools = declared.map((tool, i) => ({ tool, param: `tools[${i}]` })).filter(({ tool }) => !isToolSearch(tool));
  if (tools.length === 0) return toolChoiceWithoutTools(body.tool_choice);
  return {
    tools: tools.map(({ tool, param }) => chatTool(tool, param, toolNames)),
    ...toolChoiceFields(body.tool_choice, toolNames),
  };
}

/**
 * Anthropic's tool search server tools find `defer_loading` tools on demand. Chat has no deferred
 * loading: every tool, deferred or not, is declared as an ordinary function (`defer_loading` is not
 * copied), so the search has nothing left to find and is not sent.
 */
function isToolSearch(tool: Json): boolean {
  return typeof tool.type === 'string' && tool.type.startsWith('tool_search_tool_');
}

function chatTool(tool: Json, param: string, toolNames: ToolNameMap): Json {
  if (!isAbsent(tool.type) && tool.type !== 'custom') {
    throw invalid(param, `the server tool '${String(tool.type)}' runs only on Anthropic models; remove it or choose an Anthropic model.`);
  }
  if (typeof tool.name !== 'string') throw invalid(`${param}.name`, 'must be a string.');
  const fn: Json = { name: toolNames.upstream(tool.name) };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (!isAbsent(tool.input_schema)) fn.parameters = tool.input_schema;
  if (tool.strict === true) fn.strict = true;
  return { type: 'function', function: fn };
}

/**
 * OpenAI rejects `tool_choice` and `parallel_tool_calls` without `tools`. Without tools, `auto` and
 * `none` already hold; forcing a tool that does not exist is the client's mistake to hear about.
 */
function toolChoiceWithoutTools(choice: unknown): Json {
  const type = object(choice).type;
  if (type === 'any' || type === 'tool') throw invalid('tool_choice', `'${type}' needs at least one tool in tools.`);
  return {};
}

function toolChoiceFields(choice: unknown, toolNames: ToolNameMap): Json {
  if (isAbsent(choice)) return {};
  const fields: Json = { tool_choice: chatToolChoice(object(choice), toolNames) };
  if (object(choice).disable_parallel_tool_use === true) fields.parallel_tool_calls = false;
  return fields;
}

function chatToolChoice(choice: Json, toolNames: ToolNameMap): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (typeof choice.name !== 'string') throw invalid('tool_choice.name', 'must be a string.');
      return { type: 'function', function: { name: toolNames.upstream(choice.name) } };
    default:
      throw invalid('tool_choice.type', "must be 'auto', 'any', 'tool' or 'none'.");
  }
}
