/**
 * A mock Anthropic Messages API that answers as the real one does for what the clients send: tool
 * calls to a declared tool with schema-valid input, signed thinking whose signature it checks when
 * it comes back, full SSE event sequences, message threads, count_tokens, and the documented
 * validation rules a translating gateway can trip over (tool_use/tool_result pairing, the
 * thinking-block rule, sampling under API 2026-10-21, tool names, forced tools with thinking), and
 * its web search server tool: a prompt that asks to search the web gets one search and a cited answer.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { requestedTool, schemaProblem, valueFor } from './schema-value.mjs';

const SIGNING_KEY = randomBytes(32);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const THINKING_RULE =
  'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

class AnthropicRefusal extends Error {
  constructor(status, type, message, details) {
    super(message);
    this.status = status;
    this.type = type;
    this.details = details;
  }
}

const invalid = (message) => new AnthropicRefusal(400, 'invalid_request_error', message);

function sign(thinking) {
  return createHmac('sha256', SIGNING_KEY).update(thinking).digest('base64');
}

/** The Messages side of the mock: `handle` answers one request already parsed. */
export class AnthropicMock {
  constructor(log) {
    this.log = log;
    /** Threads by the id of their last message: the system, tools and history the server keeps. */
    this.threads = new Map();
  }

  handle(path, headers, body, res) {
    try {
      if (path === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: estimateTokens(body) });
      if (path !== '/v1/messages') throw new AnthropicRefusal(404, 'not_found_error', `Not found: ${path}`);
      const request = this.resolveThread(body);
      validate(request, headers);
      const message = answer(request);
      if (body.thread !== undefined) this.threads.set(message.id, { ...request, messages: [...request.messages, { role: 'assistant', content: message.content }] });
      this.log.push({ protocol: 'anthropic', body, reply: message });
      if (body.stream === true) return stream(res, message);
      return json(res, 200, message);
    } catch (err) {
      if (!(err instanceof AnthropicRefusal)) throw err;
      this.log.push({ protocol: 'anthropic', body, error: err.message });
      const error = { type: err.type, message: err.message };
      if (err.details !== undefined) error.details = err.details;
      return json(res, err.status, { type: 'error', error, request_id: `req_${randomBytes(8).toString('hex')}` });
    }
  }

  /** A `continue` brings only the new messages: the thread supplies system, tools and history. */
  resolveThread(body) {
    const thread = body.thread;
    if (thread === undefined || thread.type === 'create') return body;
    if (thread.type !== 'continue') throw invalid('thread.type: must be create or continue');
    const previous = this.threads.get(thread.previous_message_id);
    if (previous === undefined) throw new AnthropicRefusal(404, 'not_found_error', 'thread not found', { error_code: 'thread_not_found' });
    if (body.system !== undefined || body.tools !== undefined) throw invalid('system and tools come from the thread on a continue');
    return { ...body, system: previous.system, tools: previous.tools, messages: [...previous.messages, ...body.messages] };
  }
}

function validate(body, headers) {
  if (typeof body.model !== 'string' || !body.model.startsWith('claude-')) throw new AnthropicRefusal(404, 'not_found_error', `model: ${body.model}`);
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) throw invalid('max_tokens: Field required');
  if (headers['anthropic-version'] === '2026-10-21') {
    for (const field of ['temperature', 'top_p', 'top_k']) if (body[field] !== undefined) throw invalid(`${field}: Extra inputs are not permitted`);
  }
  const tools = body.tools ?? [];
  tools.forEach((tool, i) => {
    if (typeof tool.type === 'string' && tool.type.startsWith('web_search_')) return validateWebSearchTool(tool, i);
    if (tool.type !== undefined && tool.type !== 'custom') return;
    if (!TOOL_NAME.test(tool.name ?? '')) throw invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
    if (tool.input_schema?.type !== 'object') throw invalid(`tools.${i}.custom.input_schema.type: Field required`);
  });
  const thinking = body.thinking?.type;
  if (thinking === 'enabled') {
    const budget = body.thinking.budget_tokens;
    if (!Number.isInteger(budget) || budget < 1024) throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if (budget >= body.max_tokens) throw invalid('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
  }
  if ((thinking === 'enabled' || thinking === 'adaptive') && ['any', 'tool'].includes(body.tool_choice?.type)) {
    throw invalid('Thinking may not be enabled when tool_choice forces tool use.');
  }
  validateMessages(body.messages, thinking === 'enabled');
}

/** The web search server tool as the API checks it. */
function validateWebSearchTool(tool, i) {
  if (tool.type !== 'web_search_20250305') throw invalid(`tools.${i}: Input tag '${tool.type}' found using 'type' does not match any of the expected tags`);
  if (tool.name !== 'web_search') throw invalid(`tools.${i}.web_search_20250305.name: Input should be 'web_search'`);
  if (tool.max_uses !== undefined && (!Number.isInteger(tool.max_uses) || tool.max_uses < 1)) throw invalid(`tools.${i}.web_search_20250305.max_uses: Input should be greater than 0`);
  if (tool.allowed_domains !== undefined && tool.blocked_domains !== undefined) throw invalid(`tools.${i}: Cannot specify both allowed_domains and blocked_domains`);
  for (const key of Object.keys(tool)) {
    if (!['type', 'name', 'max_uses', 'allowed_domains', 'blocked_domains', 'user_location', 'cache_control'].includes(key)) throw invalid(`tools.${i}.web_search_20250305.${key}: Extra inputs are not permitted`);
  }
}

/** A server tool's use must be answered by its result in the same assistant turn, and a result must answer one. */
function validateServerToolBlocks(blocks, i) {
  const used = new Set();
  blocks.forEach((block, j) => {
    if (block.type === 'server_tool_use') used.add(block.id);
    if (block.type === 'web_search_tool_result') {
      if (!used.has(block.tool_use_id)) throw invalid(`messages.${i}.content.${j}: web_search_tool_result block(s) provided without a preceding server_tool_use block with id ${block.tool_use_id}`);
      used.delete(block.tool_use_id);
    }
  });
  if (used.size > 0) throw invalid(`messages.${i}.content: server_tool_use ids were found without web_search_tool_result blocks immediately after: ${[...used].join(', ')}`);
}

function validateMessages(messages, budgetThinking) {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages: at least one message is required');
  let pendingToolUses = [];
  messages.forEach((message, i) => {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (!Array.isArray(blocks)) throw invalid(`messages.${i}.content: Input should be a valid list`);
    if (i > 0 && messages[i - 1].role === message.role) {
      // The API merges consecutive same-role turns, so this is allowed; nothing to check.
    }
    blocks.forEach((block, j) => {
      if (block.type === 'text' && block.text === '') throw invalid(`messages.${i}.content.${j}.text: text content blocks must be non-empty`);
      if (block.type === 'thinking' && block.signature !== sign(block.thinking)) {
        throw invalid(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
      }
    });
    if (message.role === 'user') {
      const results = blocks.filter((block) => block.type === 'tool_result').map((block) => block.tool_use_id);
      for (const id of results) {
        if (!pendingToolUses.includes(id)) {
          throw invalid(`messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
        }
      }
      const missing = pendingToolUses.filter((id) => !results.includes(id));
      if (missing.length > 0) {
        throw invalid(`messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      }
      pendingToolUses = [];
    } else if (message.role === 'assistant') {
      validateServerToolBlocks(blocks, i);
      pendingToolUses = blocks.filter((block) => block.type === 'tool_use').map((block) => block.id);
    } else if (message.role !== 'system') {
      // Mid-conversation system turns are accepted (Claude Code sends them).
      throw invalid(`messages.${i}.role: Input should be 'user', 'assistant' or 'system'`);
    }
  });
  if (budgetThinking) checkThinkingRule(messages);
}

/** Anthropic's thinking-block rule: the assistant turn a tool result answers must open with thinking. */
function checkThinkingRule(messages) {
  const last = messages.at(-1);
  const lastBlocks = Array.isArray(last.content) ? last.content : [];
  if (last.role !== 'user' || !lastBlocks.some((block) => block.type === 'tool_result')) return;
  const index = messages.length - 2;
  const assistant = messages[index];
  const first = Array.isArray(assistant?.content) ? assistant.content[0] : { type: 'text' };
  if (first?.type !== 'thinking' && first?.type !== 'redacted_thinking') {
    throw invalid(`messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. ${THINKING_RULE}`);
  }
}

/** The text of the latest user turn, and the results of tools it carries. */
function latestUserTurn(messages) {
  const last = [...messages].reverse().find((message) => message.role === 'user');
  const blocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
  // The prompt is the last text block; earlier ones carry the client's reminders and context.
  const text = blocks.filter((block) => block.type === 'text').at(-1)?.text ?? '';
  const results = blocks
    .filter((block) => block.type === 'tool_result')
    .map((block) => (typeof block.content === 'string' ? block.content : (block.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('')));
  return { text, results };
}

function answer(body) {
  const { text, results } = latestUserTurn(body.messages);
  const content = [];
  const thinking = body.thinking?.type;
  if (thinking === 'enabled' || thinking === 'adaptive') {
    const thought = `Considering: ${text.slice(0, 60) || 'the tool result'}`;
    content.push({ type: 'thinking', thinking: thought, signature: sign(thought) });
  }
  const search = results.length > 0 ? null : webSearch(body, text);
  const call = results.length > 0 || search !== null ? null : toolCall(body, text);
  if (search !== null) {
    content.push(...search.blocks);
  } else if (call !== null) {
    content.push({ type: 'text', text: 'Let me check.' });
    content.push(call);
  } else {
    content.push({ type: 'text', text: replyText(body, text, results) });
  }
  const inputTokens = estimateTokens(body);
  return {
    id: `msg_${randomBytes(12).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: call !== null ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: inputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: estimateTokens(content),
      ...(search !== null && { server_tool_use: { web_search_requests: 1 } }),
    },
  };
}

/** What the mock's web finds, and the fact its answer cites. */
export const WEB_RESULTS = [
  { type: 'web_search_result', url: 'https://tollgate.example/releases', title: 'Tollgate releases', encrypted_content: 'RW5jcnlwdGVkIHJlc3VsdCAx', page_age: '2 days ago' },
  { type: 'web_search_result', url: 'https://news.example/tollgate', title: 'Tollgate ships', encrypted_content: 'RW5jcnlwdGVkIHJlc3VsdCAy', page_age: null },
];
export const WEB_FACT = 'Tollgate 1.0 was released on 2026-11-20';

/** With the web search tool declared and a prompt that asks to search the web: one search and a cited answer. */
function webSearch(body, text) {
  const declared = (body.tools ?? []).some((tool) => tool.type === 'web_search_20250305');
  if (!declared || !/search the web/i.test(text)) return null;
  const id = `srvtoolu_${randomBytes(12).toString('hex')}`;
  const citation = { type: 'web_search_result_location', url: WEB_RESULTS[0].url, title: WEB_RESULTS[0].title, encrypted_index: 'RW5jcnlwdGVkIGluZGV4', cited_text: `${WEB_FACT}.` };
  return {
    blocks: [
      { type: 'server_tool_use', id, name: 'web_search', input: { query: text.slice(0, 80) } },
      { type: 'web_search_tool_result', tool_use_id: id, content: WEB_RESULTS },
      { type: 'text', text: 'According to the project page, ' },
      { type: 'text', text: WEB_FACT, citations: [citation] },
      { type: 'text', text: '.' },
    ],
  };
}

function toolCall(body, text) {
  const tools = (body.tools ?? []).filter((tool) => tool.type === undefined || tool.type === 'custom');
  if (tools.length === 0 || body.tool_choice?.type === 'none') return null;
  const forced = body.tool_choice?.type === 'tool' ? body.tool_choice.name : body.tool_choice?.type === 'any' ? tools[0].name : null;
  const wanted = forced !== null ? { name: forced, hint: {} } : requestedTool(text, tools.map((tool) => tool.name));
  if (wanted === null) return null;
  const tool = tools.find((candidate) => candidate.name === wanted.name);
  const input = valueFor(tool.input_schema, wanted.hint);
  const problem = schemaProblem(tool.input_schema, input);
  if (problem !== null) throw new Error(`mock produced invalid input for ${tool.name}: ${problem}`);
  return { type: 'tool_use', id: `toolu_${randomBytes(12).toString('hex')}`, name: tool.name, input };
}

function replyText(body, text, results) {
  const format = body.output_config?.format;
  if (format?.type === 'json_schema') return JSON.stringify(valueFor(format.schema, {}));
  if (results.length > 0) return `The tool said: ${results.join(' | ').slice(0, 400)}`;
  return `Hello from ${body.model}.`;
}

export function estimateTokens(value) {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(6).toString('hex')}` });
  res.end(JSON.stringify(body));
}

/** The SSE events of `message`, as the API streams them. */
function stream(res, message) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  send('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  send('ping', {});
  message.content.forEach((block, index) => {
    if (block.type === 'thinking') {
      send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      send('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '', ...(block.citations !== undefined && { citations: [] }) } });
      for (const citation of block.citations ?? []) send('content_block_delta', { index, delta: { type: 'citations_delta', citation } });
      const half = Math.ceil(block.text.length / 2);
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text.slice(0, half) } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text.slice(half) } });
    } else if (block.type === 'server_tool_use') {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      const args = JSON.stringify(block.input);
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(0, 5) } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(5) } });
    } else if (block.type === 'web_search_tool_result') {
      send('content_block_start', { index, content_block: block });
    } else {
      send('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      const args = JSON.stringify(block.input);
      const half = Math.ceil(args.length / 2);
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } });
    }
    send('content_block_stop', { index });
  });
  const searches = message.usage.server_tool_use === undefined ? {} : { server_tool_use: message.usage.server_tool_use };
  send('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens, ...searches } });
  send('message_stop', {});
  res.end();
}
