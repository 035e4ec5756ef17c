/**
 * A mock OpenAI API (Chat Completions and Responses) that answers as the real one does for what the
 * clients send: calls to a declared function with schema-valid arguments, reasoning models that
 * refuse `max_tokens` and sampling, non-reasoning models that refuse `reasoning_effort`, unknown
 * parameters refused by name, tool-message pairing checked, Responses events with all their fields,
 * and stored responses for `previous_response_id` and `item_reference`.
 */
import { randomBytes } from 'node:crypto';
import { requestedTool, schemaProblem, valueFor } from './schema-value.mjs';

/** The models the mock serves, and the reasoning efforts each accepts (none: not a reasoning model). */
const MODELS = {
  'gpt-5.1': ['none', 'low', 'medium', 'high'],
  'gpt-5-mini': ['minimal', 'low', 'medium', 'high'],
  'gpt-4.1-mini': null,
};

const CHAT_FIELDS = new Set([
  'model', 'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tokens', 'max_completion_tokens', 'stop', 'temperature',
  'top_p', 'n', 'stream', 'stream_options', 'response_format', 'reasoning_effort', 'user', 'metadata', 'frequency_penalty',
  'presence_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'seed', 'service_tier', 'store', 'modalities', 'audio', 'prediction',
  'verbosity', 'web_search_options', 'prompt_cache_key', 'safety_identifier',
]);
const FUNCTION_FIELDS = new Set(['name', 'description', 'parameters', 'strict']);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

class OpenAIRefusal extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.body = { error: { message, type, param, code } };
  }
}

const unsupported = (param, message) => new OpenAIRefusal(400, message, { param, code: 'unsupported_parameter' });

export class OpenAIMock {
  constructor(log) {
    this.log = log;
    /** Stored responses and their items, as OpenAI keeps them when `store` is not false. */
    this.responses = new Map();
    this.items = new Map();
  }

  handle(path, body, res) {
    try {
      if (path === '/v1/chat/completions') return this.chat(body, res);
      if (path === '/v1/responses') return this.respond(body, res);
      throw new OpenAIRefusal(404, `Invalid URL (POST ${path})`, { code: 'unknown_url' });
    } catch (err) {
      if (!(err instanceof OpenAIRefusal)) throw err;
      this.log.push({ protocol: 'openai', path, body, error: err.message });
      return json(res, err.status, err.body);
    }
  }

  chat(body, res) {
    const efforts = modelEfforts(body.model);
    for (const field of Object.keys(body)) if (!CHAT_FIELDS.has(field)) throw new OpenAIRefusal(400, `Unrecognized request argument supplied: ${field}`);
    checkReasoning(efforts, body.reasoning_effort, 'reasoning_effort', body);
    if (efforts !== null && body.max_tokens !== undefined) {
      throw unsupported('max_tokens', "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.");
    }
    const tools = chatTools(body.tools);
    checkChatMessages(body.messages);
    const { text, results } = latestChatTurn(body.messages);
    const call = results.length > 0 ? null : pickCall(tools, body.tool_choice, text);
    const content = call === null ? replyText(body.model, formatSchema(body.response_format?.json_schema?.schema, body.response_format), results) : null;
    const id = `chatcmpl-${randomBytes(10).toString('hex')}`;
    const usage = { prompt_tokens: tokens(body), completion_tokens: tokens(content ?? call), total_tokens: 0 };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const toolCalls = call === null ? undefined : [{ id: `call_${randomBytes(10).toString('hex')}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } }];
    this.log.push({ protocol: 'openai', path: '/v1/chat/completions', body, reply: { content, toolCalls } });
    if (body.stream === true) return chatStream(res, { id, model: body.model, content, toolCalls, usage, includeUsage: body.stream_options?.include_usage === true });
    return json(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, ...(toolCalls && { tool_calls: toolCalls }), annotations: [] }, logprobs: null, finish_reason: toolCalls ? 'tool_calls' : 'stop' }],
      usage,
      service_tier: 'default',
      system_fingerprint: 'fp_mock',
    });
  }

  respond(body, res) {
    const efforts = modelEfforts(body.model);
    checkReasoning(efforts, body.reasoning?.effort, 'reasoning.effort', body);
    const input = this.expandedInput(body);
    const tools = responsesTools(body.tools);
    const { text, results } = latestResponsesTurn(input);
    const call = results.length > 0 ? null : pickCall(tools, body.tool_choice, text);
    const output = [];
    if (efforts !== null && body.reasoning?.effort !== undefined && body.reasoning.effort !== 'none') {
      output.push({ type: 'reasoning', id: `rs_${randomBytes(10).toString('hex')}`, summary: [], ...(wantsEncrypted(body) && { encrypted_content: randomBytes(16).toString('base64') }) });
    }
    if (call !== null) {
      output.push({
        type: 'function_call', id: `fc_${randomBytes(10).toString('hex')}`, call_id: `call_${randomBytes(10).toString('hex')}`, name: call.name,
        ...(call.namespace !== undefined && { namespace: call.namespace }), arguments: JSON.stringify(call.args), status: 'completed',
      });
    } else {
      const schema = body.text?.format?.type === 'json_schema' ? body.text.format.schema : undefined;
      const message = replyText(body.model, formatSchema(schema, body.text?.format), results);
      output.push({ type: 'message', id: `msg_${randomBytes(10).toString('hex')}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: message, annotations: [], logprobs: [] }] });
    }
    const response = responseObject(body, output, input);
    if (body.store !== false) {
      this.responses.set(response.id, { input, output });
      for (const item of [...input, ...output]) if (typeof item.id === 'string') this.items.set(item.id, item);
    }
    this.log.push({ protocol: 'openai', path: '/v1/responses', body, reply: output });
    if (body.stream === true) return responsesStream(res, response);
    return json(res, 200, response);
  }

  /** The conversation the request stands for: the stored one it continues, then its own input with references resolved. */
  expandedInput(body) {
    const own = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input ?? [];
    const resolved = own.map((item, i) => {
      if (item.type !== 'item_reference') return item;
      const stored = this.items.get(item.id);
      if (stored === undefined) throw new OpenAIRefusal(404, `Item with id '${item.id}' not found.`, { param: `input[${i}]` });
      return stored;
    });
    if (body.previous_response_id === undefined || body.previous_response_id === null) return resolved;
    const previous = this.responses.get(body.previous_response_id);
    if (previous === undefined) throw new OpenAIRefusal(400, `Previous response with id '${body.previous_response_id}' not found.`, { param: 'previous_response_id', code: 'previous_response_not_found' });
    return [...previous.input, ...previous.output, ...resolved];
  }
}

function modelEfforts(model) {
  if (!Object.hasOwn(MODELS, model)) throw new OpenAIRefusal(404, `The model \`${model}\` does not exist or you do not have access to it.`, { code: 'model_not_found' });
  return MODELS[model];
}

function checkReasoning(efforts, effort, param, body) {
  if (effort === undefined || effort === null) {
    if (efforts !== null && body.temperature !== undefined && body.temperature !== 1) {
      throw new OpenAIRefusal(400, "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.", { param: 'temperature', code: 'unsupported_value' });
    }
    return;
  }
  if (efforts === null) throw unsupported(param, `Unsupported parameter: '${param}' is not supported with this model.`);
  if (!efforts.includes(effort)) {
    throw new OpenAIRefusal(400, `Unsupported value: '${param}' does not support '${effort}' with this model. Supported values are: ${efforts.map((e) => `'${e}'`).join(', ')}.`, { param, code: 'unsupported_value' });
  }
}

function chatTools(tools) {
  return (tools ?? []).map((tool, i) => {
    if (tool.type !== 'function') throw new OpenAIRefusal(400, `Invalid value: '${tool.type}'. Supported values are: 'function' and 'custom'.`, { param: `tools[${i}].type` });
    for (const field of Object.keys(tool.function ?? {})) {
      if (!FUNCTION_FIELDS.has(field)) throw new OpenAIRefusal(400, `Unknown parameter: 'tools[${i}].function.${field}'.`, { param: `tools[${i}].function.${field}`, code: 'unknown_parameter' });
    }
    if (!TOOL_NAME.test(tool.function.name ?? '')) throw new OpenAIRefusal(400, `Invalid 'tools[${i}].function.name': string does not match pattern.`, { param: `tools[${i}].function.name` });
    return { name: tool.function.name, parameters: tool.function.parameters };
  });
}

/** Function tools as the model sees them; a namespace contributes its functions, called with the namespace's name. */
function responsesTools(tools) {
  return (tools ?? []).flatMap((tool, i) => {
    if (tool.type === 'function') {
      if (!TOOL_NAME.test(tool.name ?? '')) throw new OpenAIRefusal(400, `Invalid 'tools[${i}].name': string does not match pattern.`, { param: `tools[${i}].name` });
      return [{ name: tool.name, parameters: tool.parameters }];
    }
    if (tool.type === 'namespace') return (tool.tools ?? []).filter((inner) => inner.type === 'function').map((inner) => ({ name: inner.name, parameters: inner.parameters, namespace: tool.name }));
    return [];
  });
}

function checkChatMessages(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw new OpenAIRefusal(400, "Invalid 'messages': empty array.", { param: 'messages' });
  let pending = [];
  messages.forEach((message, i) => {
    if (message.role === 'tool') {
      if (!pending.includes(message.tool_call_id)) {
        throw new OpenAIRefusal(400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", { param: `messages.[${i}].role` });
      }
      pending = pending.filter((id) => id !== message.tool_call_id);
      return;
    }
    if (pending.length > 0) {
      throw new OpenAIRefusal(400, `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${pending.join(', ')}`, { param: 'messages' });
    }
    if (!['system', 'developer', 'user', 'assistant'].includes(message.role)) throw new OpenAIRefusal(400, `Invalid value: '${message.role}'.`, { param: `messages[${i}].role` });
    if (message.role === 'assistant') pending = (message.tool_calls ?? []).map((call) => call.id);
  });
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).filter((part) => ['text', 'input_text', 'output_text'].includes(part.type)).map((part) => part.text).join('\n');
}

/** The prompt of a user message: its last text part (earlier ones carry the client's reminders and context). */
function promptOf(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).filter((part) => ['text', 'input_text'].includes(part.type)).at(-1)?.text ?? '';
}

function latestChatTurn(messages) {
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const results = messages.slice(lastUser + 1).filter((m) => m.role === 'tool').map((m) => textOf(m.content));
  return { text: lastUser >= 0 ? promptOf(messages[lastUser].content) : '', results };
}

function latestResponsesTurn(input) {
  const isUser = (item) => (item.type === undefined || item.type === 'message') && item.role === 'user';
  let lastUser = -1;
  input.forEach((item, i) => {
    if (isUser(item)) lastUser = i;
  });
  const results = input.slice(lastUser + 1).filter((item) => item.type === 'function_call_output').map((item) => (typeof item.output === 'string' ? item.output : textOf(item.output)));
  return { text: lastUser >= 0 ? promptOf(input[lastUser].content) : '', results };
}

function pickCall(tools, choice, text) {
  if (tools.length === 0 || choice === 'none') return null;
  const forcedName = typeof choice === 'object' && choice !== null ? choice.name ?? choice.function?.name : choice === 'required' ? tools[0].name : null;
  const wanted = forcedName !== null && forcedName !== undefined ? { name: forcedName, hint: {} } : requestedTool(text, tools.map((tool) => tool.name));
  if (wanted === null) return null;
  const tool = tools.find((candidate) => candidate.name === wanted.name);
  const args = valueFor(tool.parameters ?? { type: 'object', properties: {} }, wanted.hint);
  const problem = schemaProblem(tool.parameters, args);
  if (problem !== null) throw new Error(`mock produced invalid arguments for ${tool.name}: ${problem}`);
  return { name: tool.name, args, namespace: tool.namespace };
}

function formatSchema(schema, format) {
  if (format?.type === 'json_schema') return schema ?? { type: 'object' };
  if (format?.type === 'json_object') return { type: 'object', properties: { answer: { type: 'string' } } };
  return undefined;
}

function replyText(model, schema, results) {
  if (schema !== undefined) return JSON.stringify(valueFor(schema, {}));
  if (results.length > 0) return `The tool said: ${results.join(' | ').slice(0, 400)}`;
  return `Hello from ${model}.`;
}

function wantsEncrypted(body) {
  return Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
}

function tokens(value) {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${randomBytes(6).toString('hex')}` });
  res.end(JSON.stringify(body));
}

function chatStream(res, { id, model, content, toolCalls, usage, includeUsage }) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta, finish = null) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage && { usage: null }) })}\n\n`);
  chunk({ role: 'assistant', content: '', refusal: null });
  if (content !== null) {
    const half = Math.ceil(content.length / 2);
    chunk({ content: content.slice(0, half) });
    chunk({ content: content.slice(half) });
  }
  (toolCalls ?? []).forEach((call, index) => {
    chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
    chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
  });
  chunk({}, toolCalls ? 'tool_calls' : 'stop');
  if (includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock', choices: [], usage })}\n\n`);
  res.write('data: [DONE]\n\n');
  res.end();
}

function responseObject(body, output, input) {
  const inputTokens = tokens(input);
  const outputTokens = tokens(output);
  return {
    id: `resp_${randomBytes(12).toString('hex')}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    completed_at: Math.floor(Date.now() / 1000),
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: body.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: null },
    safety_identifier: null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: { input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: outputTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: inputTokens + outputTokens },
    user: null,
    metadata: body.metadata ?? {},
  };
}

/** The Responses event sequence for a finished response, every event with its sequence number. */
function responsesStream(res, response) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let sequence = 0;
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  const pending = { ...response, status: 'in_progress', completed_at: null, output: [], usage: null };
  send('response.created', { response: pending });
  send('response.in_progress', { response: pending });
  response.output.forEach((item, outputIndex) => {
    if (item.type === 'message') {
      send('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      const part = item.content[0];
      send('response.content_part.added', { item_id: item.id, output_index: outputIndex, content_index: 0, part: { ...part, text: '' } });
      send('response.output_text.delta', { item_id: item.id, output_index: outputIndex, content_index: 0, delta: part.text, logprobs: [] });
      send('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: part.text, logprobs: [] });
      send('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part });
    } else if (item.type === 'function_call') {
      send('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      send('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta: item.arguments });
      send('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments });
    } else {
      send('response.output_item.added', { output_index: outputIndex, item });
    }
    send('response.output_item.done', { output_index: outputIndex, item });
  });
  send('response.completed', { response });
  res.end();
}
