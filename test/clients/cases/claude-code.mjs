/**
 * Claude Code 2.1.330, `claude -p --output-format stream-json`, ANTHROPIC_BASE_URL = Tollgate: a
 * tool round trip (the model reads a file through Claude Code's Read tool) on a claude model
 * natively and on an OpenAI model translated, plus its default model name served by an alias.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS, check } from './util.mjs';
import { runCli } from './cli.mjs';

const CLIENT = 'Claude Code 2.1.330';
const SECRET = 'tollgate-client-suite-file-content';

function claude(env, model, prompt, extraEnv = {}) {
  return runCli('claude', (home) => ['-p', prompt.replaceAll('$HOME', home), '--output-format', 'stream-json', '--verbose', '--model', model, '--dangerously-skip-permissions', '--max-turns', '4'], {
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

export const cases = [
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'anthropic', model: MODELS.claude, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'claude -p stream-json, Read tool round trip', family: 'openai', model: MODELS.gpt, fix: 5, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'claude -p on a non-reasoning model', family: 'openai', model: MODELS.gptPlain, fix: 6, run: (env) => toolRoundTrip(env, env.model) },
  { client: CLIENT, feature: 'default model name (claude-opus-5-5) via alias', family: 'anthropic', model: 'claude-opus-5-5', fix: 7, run: (env) => toolRoundTrip(env, env.model) },
];
