/**
 * Claude Code 2.1.330, `claude -p --output-format stream-json`, ANTHROPIC_BASE_URL = Tollgate: a
 * tool round trip (the model reads a file through Claude Code's Read tool) on a claude model
 * natively and on an OpenAI model translated, plus its default model name served by an alias.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODELS, check } from './util.mjs';
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

export const cases = [
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'anthropic', model: MODELS.claude, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'openai', model: MODELS.gpt, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'tool search (deferred MCP tool, tool_reference)', family: 'anthropic', model: MODELS.claude, run: (env) => toolSearch(env, env.model, 'anthropic') },
  { client: CLIENT, feature: 'tool search (deferred MCP tool, tool_reference)', family: 'openai', model: MODELS.gpt, fix: 5, run: (env) => toolSearch(env, env.model, 'openai') },
  { client: CLIENT, feature: 'claude -p on a non-reasoning model', family: 'openai', model: MODELS.gptPlain, fix: 6, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'default model name (claude-opus-5-5) via alias', family: 'anthropic', model: 'claude-opus-5-5', fix: 7, run: (env) => toolRoundTrip(env, env.model) },
];
