/**
 * Claude Code 2.1.330, `claude -p --output-format stream-json`, ANTHROPIC_BASE_URL = Tollgate: a
 * tool round trip (the model reads a file through Claude Code's Read tool) on a claude model
 * natively and on an OpenAI model translated, plus its default model name served by an alias; and
 * the run's cost read back through the management API under the session id Claude Code sent.
 */
import { writeFileSync } from 'node:fs';
import { request as httpRequest, createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODELS, check, checkEqual } from './util.mjs';
import { runCli } from './cli.mjs';

const CLIENT = 'Claude Code 2.1.330';
const SECRET = 'tollgate-client-suite-file-content';

function claude(env, model, prompt, extraEnv = {}, extraArgs = []) {
  return runCli('claude', (home) => ['-p', prompt.replaceAll('$HOME', home), '--output-format', 'stream-json', '--verbose', '--model', model, '--dangerously-skip-permissions', '--max-turns', '4', ...extraArgs], {
    env: {
      ANTHROPIC_BASE_URL: env.url,
      ANTHROPIC_API_KEY: env.key,
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
      IS_SANDBOX: '1',
      ...extraEnv,
    },
    setup: (home) => writeFileSync(join(home, 'note.txt'), `${SECRET}\n`),
  });
}

/** The stream-json events Claude Code printed, and its final `result` event. */
function events(stdout) {
  const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
  const parsed = lines.map((line) => JSON.parse(line));
  return { parsed, result: parsed.find((event) => event.type === 'result') };
}

async function toolRoundTrip(env, model) {
  const run = await claude(env, model, 'Tell me what my note says. Use Read with {"file_path":"$HOME/note.txt"}');
  const { parsed, result } = events(run.stdout);
  check(result !== undefined, `no result event (exit ${run.code}): ${run.stderr.slice(-800)} ${run.stdout.slice(-800)}`);
  check(result.is_error !== true && result.subtype === 'success', `Claude Code failed: ${JSON.stringify(result).slice(0, 800)}`);
  const toolResults = parsed.filter((event) => event.type === 'user').flatMap((event) => event.message?.content ?? []).filter((block) => block.type === 'tool_result');
  check(toolResults.length > 0, 'Claude Code ran no tool');
  check(String(result.result).includes(SECRET), `the answer does not quote the file: ${JSON.stringify(result.result)}`);
}

const MCP_SERVER = fileURLToPath(new URL('./mcp-notes-server.mjs', import.meta.url));

/**
 * Tool search: Claude Code defers the MCP server's tool and finds it with ToolSearch, whose result
 * is a `tool_reference` block; the answer after it must come back (on an OpenAI model the block is
 * translated to text and the deferred tool declared as an ordinary function).
 */
async function toolSearch(env, model, family) {
  const mcpConfig = JSON.stringify({ mcpServers: { notes: { type: 'stdio', command: process.execPath, args: [MCP_SERVER], env: { NOTE_TEXT: SECRET } } } });
  const run = await claude(env, model, 'Find the notes tool. Use ToolSearch with {"query":"select:mcp__notes__lookup_note"}', { ENABLE_TOOL_SEARCH: 'true' }, ['--mcp-config', mcpConfig, '--strict-mcp-config']);
  const { parsed, result } = events(run.stdout);
  check(result?.subtype === 'success' && result.is_error !== true, `Claude Code failed (exit ${run.code}): ${JSON.stringify(result ?? run.stderr.slice(-800)).slice(0, 800)}`);
  const searched = parsed.filter((event) => event.type === 'user').flatMap((event) => event.message?.content ?? []).filter((block) => block.type === 'tool_result');
  check(searched.length > 0, 'Claude Code ran no tool search');
  // The tool search result reached the model: as a tool_reference natively, as text when translated.
  const marker = family === 'openai' ? 'Tool loaded: mcp__notes__lookup_note' : '"tool_name":"mcp__notes__lookup_note"';
  const answered = env.upstreamSince().filter((entry) => entry.error === undefined && JSON.stringify(entry.body).includes(marker));
  check(answered.length > 0, `no upstream request carried the tool search result (${marker})`);
}

/**
 * A pass-through in front of Tollgate that keeps the method, path and headers of every request
 * Claude Code made and the status it got: what the client sent, not what Tollgate made of it.
 */
async function recordingProxy(target) {
  const seen = [];
  const server = createServer((req, res) => {
    const entry = { method: req.method, path: req.url ?? '/', headers: req.headers, status: null };
    seen.push(entry);
    const upstream = httpRequest(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      entry.status = answer.statusCode;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (err) => res.destroy(err));
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** `GET /api…` with the suite account's management token. */
async function api(env, path) {
  const res = await fetch(`${env.url}/api${path}`, { headers: { authorization: `Bearer ${env.managementToken}` } });
  const text = await res.text();
  check(res.status === 200, `GET /api${path} answered ${res.status}: ${text.slice(0, 400)}`);
  return JSON.parse(text);
}

/** A decimal amount of balance units as the API prints it, in exact nano-units. */
function nano(units) {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?$/.exec(String(units));
  check(match !== null, `not an amount: ${JSON.stringify(units)}`);
  const value = BigInt(match[2]) * 10n ** 9n + BigInt((match[3] ?? '').padEnd(9, '0'));
  return match[1] === '-' ? -value : value;
}

/**
 * Cost per session: every billed request of a real Claude Code run is recorded under the one
 * `X-Claude-Code-Session-Id` it sent, and the session's cost is the sum of those charges and what
 * the ledger took from the balance, to the nano-unit.
 */
async function sessionCost(env, model) {
  const [accountBefore, usageBefore, sessionsBefore] = await Promise.all([api(env, '/account'), api(env, '/usage?limit=1000'), api(env, '/usage/sessions?limit=1000')]);
  const proxy = await recordingProxy(env.url);
  try {
    await toolRoundTrip({ ...env, url: proxy.url }, model);
  } finally {
    await proxy.close();
  }
  const billable = proxy.seen.filter((entry) => entry.method === 'POST' && entry.path.split('?')[0] === '/v1/messages');
  check(billable.length >= 2, `a tool round trip takes two model calls or more, Claude Code made ${billable.length}`);
  const sent = [...new Set(billable.map((entry) => entry.headers['x-claude-code-session-id']))];
  check(sent.length === 1 && typeof sent[0] === 'string' && sent[0] !== '', `Claude Code sent session ids ${JSON.stringify(sent)} on ${billable.length} requests`);
  const sessionId = sent[0];

  // The account's sessions: the run added exactly its own.
  const known = new Set(sessionsBefore.sessions.map((row) => row.group));
  const added = (await api(env, '/usage/sessions?limit=1000')).sessions.filter((row) => !known.has(row.group));
  checkEqual(added.map((row) => row.group), [sessionId], 'sessions the run added');

  // Every charge the run made (the rows of /api/usage that are new) is one of the session's requests.
  const old = new Set(usageBefore.usage.map((row) => row.request_id));
  const charged = (await api(env, '/usage?limit=1000')).usage.filter((row) => !old.has(row.request_id));
  const detail = await api(env, `/usage/sessions/${encodeURIComponent(sessionId)}?limit=1000`);
  checkEqual(detail.session.group, sessionId, 'the session opened');
  checkEqual(detail.session.requests, billable.length, 'requests in the session (Claude Code made this many model calls)');
  checkEqual(detail.requests.map((row) => row.request_id).sort(), charged.map((row) => row.request_id).sort(), 'the session\'s requests against the charges the run made');
  check(detail.requests.every((row) => row.session_id === sessionId), 'a request of the session carries another session id');

  // Its cost: the sum of its charges, and what the balance lost.
  const cost = nano(detail.session.cost);
  check(cost > 0n, `the session cost nothing (${detail.session.cost}) on a priced model`);
  checkEqual(String(detail.requests.reduce((sum, row) => sum + nano(row.cost), 0n)), String(cost), 'sum of the session\'s request costs (nano-units)');
  checkEqual(String(charged.reduce((sum, row) => sum + nano(row.cost), 0n)), String(cost), 'sum of the run\'s charges (nano-units)');
  const accountAfter = await api(env, '/account');
  checkEqual(String(nano(accountBefore.balance) - nano(accountAfter.balance)), String(cost), 'balance the run took (nano-units)');
  checkEqual(accountAfter.held, '0', 'held after the run');
  const one = await api(env, `/usage/requests/${encodeURIComponent(detail.requests[0].request_id)}`);
  checkEqual(one.request.session_id, sessionId, 'one request in full: its session');
}

export const cases = [
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'anthropic', model: MODELS.claude, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'openai', model: MODELS.gpt, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'tool search (deferred MCP tool, tool_reference)', family: 'anthropic', model: MODELS.claude, run: (env) => toolSearch(env, env.model, 'anthropic') },
  { client: CLIENT, feature: 'tool search (deferred MCP tool, tool_reference)', family: 'openai', model: MODELS.gpt, fix: 5, run: (env) => toolSearch(env, env.model, 'openai') },
  { client: CLIENT, feature: 'claude -p on a non-reasoning model', family: 'openai', model: MODELS.gptPlain, fix: 6, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'default model name (claude-opus-5-5) via alias', family: 'anthropic', model: 'claude-opus-5-5', fix: 7, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'session cost (X-Claude-Code-Session-Id) = its charges', family: 'anthropic', model: MODELS.claude, run: (env) => sessionCost(env, env.model) },
];
