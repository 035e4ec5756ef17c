/**
 * OpenAI Codex CLI 0.169, `codex exec --json` with a custom model provider (wire_api "responses")
 * whose base_url is Tollgate, in its default configuration: it streams every request, and declares
 * a `namespace` tool (multi_agent_v1) and the hosted `web_search` tool (`external_web_access: false`,
 * its cached mode). On a Claude model the namespace's functions become flat tools and web search
 * becomes Claude's own web search tool, so no setting is needed: a text answer, a shell tool round
 * trip and a web search (charged per search) work on both families' terms.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WEB_FACT, WEB_RESULTS } from '../mock/anthropic.mjs';
import { MODELS, check, checkEqual } from './util.mjs';
import { runCliSession } from './cli.mjs';

const CLIENT = 'Codex CLI 0.169';
const SECRET = 'tollgate-codex-file-content';

export const EXEC_FLAGS = ['--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--json'];

/** `codex exec` with nothing in config.toml but the model and the provider. */
async function codex(env, model, prompt) {
  const [run] = await codexSession(env, model, [prompt]);
  return run;
}

/** `codex exec` for the first prompt, then `codex exec resume --last` for each next one: one conversation. */
function codexSession(env, model, prompts) {
  const config = [
    `model = "${model}"`,
    'model_provider = "tollgate"',
    '[model_providers.tollgate]',
    'name = "Tollgate"',
    `base_url = "${env.url}/v1"`,
    'env_key = "TOLLGATE_API_KEY"',
    'wire_api = "responses"',
    '[analytics]',
    'enabled = false',
  ].join('\n');
  const argsList = prompts.map((prompt, i) => (i === 0 ? ['exec', ...EXEC_FLAGS, prompt] : ['exec', ...EXEC_FLAGS, 'resume', '--last', prompt]));
  return runCliSession('codex', argsList, {
    env: { TOLLGATE_API_KEY: env.key },
    setup: (home) => {
      mkdirSync(join(home, '.codex'));
      writeFileSync(join(home, '.codex', 'config.toml'), `${config}\n`);
      writeFileSync(join(home, 'note.txt'), `${SECRET}\n`);
    },
  });
}

export function lastMessage(stdout) {
  const events = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
  const messages = events.filter((event) => event.type === 'item.completed' && event.item?.type === 'agent_message');
  return { events, text: messages.at(-1)?.item.text ?? '' };
}

/** What Tollgate sent upstream: every request of the run reached the model with Codex's default tools. */
function checkDefaultsSent(env, family) {
  const sent = env.upstreamSince().filter((entry) => entry.protocol === family);
  check(sent.length > 0, 'no request reached the upstream');
  const refused = sent.find((entry) => entry.error !== undefined);
  check(refused === undefined, `the upstream refused a request: ${refused?.error}`);
  if (family === 'anthropic') {
    const tools = sent[0].body.tools ?? [];
    check(tools.some((tool) => tool.type === 'web_search_20250305'), `Codex's web_search did not reach Claude as its web search tool: ${JSON.stringify(tools.map((tool) => tool.type ?? tool.name))}`);
  }
}

async function textAnswer(env, model, family) {
  const run = await codex(env, model, 'Say hello.');
  const { text } = lastMessage(run.stdout);
  check(text.includes('Hello from'), `no answer (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
  checkDefaultsSent(env, family);
}

async function shellRoundTrip(env, model, family) {
  const run = await codex(env, model, 'What does my note say? Use exec_command with {"cmd":"cat note.txt"}');
  const { events, text } = lastMessage(run.stdout);
  const ran = events.some((event) => event.type === 'item.completed' && event.item?.type === 'command_execution');
  check(ran, `Codex ran no command (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
  check(text.includes(SECRET), `the answer does not quote the command's output: ${JSON.stringify(text)} ${run.stdout.slice(-600)}`);
  checkDefaultsSent(env, family);
}

/** `GET /api…` with the suite account's management token. */
export async function api(env, path) {
  const res = await fetch(`${env.url}/api${path}`, { headers: { authorization: `Bearer ${env.managementToken}` } });
  const text = await res.text();
  check(res.status === 200, `GET /api${path} answered ${res.status}: ${text.slice(0, 400)}`);
  return JSON.parse(text);
}

/** A decimal amount of balance units as the API prints it, in exact nano-units. */
function nano(units) {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(String(units));
  check(match !== null, `not an amount: ${JSON.stringify(units)}`);
  return BigInt(match[1]) * 10n ** 9n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** claude-sonnet-5 in the shipped gateway.yaml, in nano-units per token, and per search. */
const SONNET_NANO = { input: 300n, cacheWrite: 380n, cacheWrite1h: 600n, cacheRead: 30n, output: 1500n, search: 10_000_000n };

/**
 * A prompt that makes the model search: Claude runs the search on its side (the mock's web), Codex
 * shows it as a web search item, the answer cites what was found, and the search is charged beside
 * the tokens, to the nano-unit.
 */
async function webSearch(env, model) {
  const before = new Set((await api(env, '/usage?limit=1000')).usage.map((row) => row.request_id));
  const [run, followUp] = await codexSession(env, model, ['Search the web for the Tollgate 1.0 release date.', 'Thanks. Say hello.']);
  const { events, text } = lastMessage(run.stdout);
  const searches = events.filter((event) => event.type === 'item.completed' && event.item?.type === 'web_search');
  check(searches.length === 1, `Codex showed ${searches.length} web searches (exit ${run.code}): ${run.stdout.slice(-1500)} ${run.stderr.slice(-600)}`);
  check(text.includes(WEB_FACT), `the answer does not carry what the search found: ${JSON.stringify(text)}`);
  checkDefaultsSent(env, 'anthropic');
  const found = env.upstreamSince().find((entry) => entry.reply?.content?.some((block) => block.type === 'web_search_tool_result'));
  check(found !== undefined, 'the upstream ran no search');
  checkEqual(found.reply.content.find((block) => block.type === 'web_search_tool_result').content.map((result) => result.url), WEB_RESULTS.map((result) => result.url), 'the pages found');

  // The next turn: Codex sends its history back whole, the web_search_call item in it, and Claude
  // gets the answer it gave without the search blocks it would refuse on their own.
  const next = lastMessage(followUp.stdout).text;
  check(next.includes('Hello from'), `the follow-up turn got no answer (exit ${followUp.code}): ${followUp.stdout.slice(-1200)} ${followUp.stderr.slice(-600)}`);
  const last = env.upstreamSince().filter((entry) => entry.protocol === 'anthropic').at(-1);
  check(last.error === undefined, `the upstream refused the follow-up: ${last.error}`);
  const history = last.body.messages.flatMap((message) => (typeof message.content === 'string' ? [] : message.content));
  check(history.some((block) => block.type === 'text' && block.text.includes(WEB_FACT)), 'the follow-up lost the answer the search led to');

  const charged = (await api(env, '/usage?limit=1000')).usage.filter((row) => !before.has(row.request_id));
  const searched = charged.filter((row) => row.tool_calls === 'web_search=1');
  check(searched.length === 1, `one charge should carry the search: ${JSON.stringify(charged.map((row) => [row.tool_calls, row.cost]))}`);
  const row = searched[0];
  const expected =
    BigInt(row.input_tokens) * SONNET_NANO.input +
    BigInt(row.cache_write_tokens) * SONNET_NANO.cacheWrite +
    BigInt(row.cache_write_1h_tokens) * SONNET_NANO.cacheWrite1h +
    BigInt(row.cache_read_tokens) * SONNET_NANO.cacheRead +
    BigInt(row.output_tokens) * SONNET_NANO.output +
    SONNET_NANO.search;
  checkEqual(String(nano(row.cost)), String(expected), 'the charge in nano-units (tokens plus one search at 10.00 per 1,000)');
  return { cost: row.cost, inputTokens: row.input_tokens, outputTokens: row.output_tokens };
}

export const cases = [
  { client: CLIENT, feature: 'codex exec, text answer (defaults, streamed)', family: 'anthropic', model: MODELS.claude, run: (env) => textAnswer(env, env.model, 'anthropic') },
  { client: CLIENT, feature: 'codex exec, text answer (defaults, streamed)', family: 'openai', model: MODELS.gpt, run: (env) => textAnswer(env, env.model, 'openai') },
  { client: CLIENT, feature: 'codex exec, shell tool round trip (defaults, streamed)', family: 'anthropic', model: MODELS.claude, fix: 3, run: (env) => shellRoundTrip(env, env.model, 'anthropic') },
  { client: CLIENT, feature: 'codex exec, shell tool round trip (defaults, streamed)', family: 'openai', model: MODELS.gpt, run: (env) => shellRoundTrip(env, env.model, 'openai') },
  { client: CLIENT, feature: 'codex exec, web search (defaults, streamed)', family: 'anthropic', model: MODELS.claude, run: (env) => webSearch(env, env.model) },
];
