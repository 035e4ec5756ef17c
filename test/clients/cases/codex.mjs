/**
 * OpenAI Codex CLI 0.169, `codex exec --json` with a custom model provider (wire_api "responses")
 * whose base_url is Tollgate: a shell tool round trip on both families. Its defaults send a
 * `namespace` tool (multi_agent_v1) and the hosted `web_search` tool; web_search is OpenAI's own
 * service and is refused for Claude models, so the claude cases turn it off as the docs say.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS, check } from './util.mjs';
import { runCli } from './cli.mjs';

const CLIENT = 'Codex CLI 0.169';
const SECRET = 'tollgate-codex-file-content';

function codex(env, model, prompt, { webSearch }) {
  const config = [
    `model = "${model}"`,
    'model_provider = "tollgate"',
    ...(webSearch ? [] : ['web_search = "disabled"']),
    '[model_providers.tollgate]',
    'name = "Tollgate"',
    `base_url = "${env.url}/v1"`,
    'env_key = "TOLLGATE_API_KEY"',
    'wire_api = "responses"',
    '[analytics]',
    'enabled = false',
  ].join('\n');
  return runCli('codex', ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--json', prompt], {
    env: { TOLLGATE_API_KEY: env.key },
    setup: (home) => {
      mkdirSync(join(home, '.codex'));
      writeFileSync(join(home, '.codex', 'config.toml'), `${config}\n`);
      writeFileSync(join(home, 'note.txt'), `${SECRET}\n`);
    },
  });
}

function lastMessage(stdout) {
  const events = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
  const messages = events.filter((event) => event.type === 'item.completed' && event.item?.type === 'agent_message');
  return { events, text: messages.at(-1)?.item.text ?? '' };
}

async function shellRoundTrip(env, model, webSearch = false) {
  const run = await codex(env, model, 'What does my note say? Use exec_command with {"cmd":"cat note.txt"}', { webSearch });
  const { events, text } = lastMessage(run.stdout);
  const ran = events.some((event) => event.type === 'item.completed' && event.item?.type === 'command_execution');
  check(ran, `Codex ran no command (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
  check(text.includes(SECRET), `the answer does not quote the command's output: ${JSON.stringify(text)} ${run.stdout.slice(-600)}`);
}

export const cases = [
  { client: CLIENT, feature: 'codex exec, shell tool round trip (defaults)', family: 'openai', model: MODELS.gpt, run: (env) => shellRoundTrip(env, env.model, true) },
  { client: CLIENT, feature: 'codex exec, shell tool round trip (web_search off)', family: 'anthropic', model: MODELS.claude, fix: 3, run: (env) => shellRoundTrip(env, env.model) },
  {
    client: CLIENT, feature: 'codex exec with hosted web_search on', family: 'anthropic', model: MODELS.claude,
    refused: "hosted web_search runs inside OpenAI's service; set web_search = \"disabled\"",
    async run(env) {
      const run = await codex(env, env.model, 'Say hello.', { webSearch: true });
      const failed = env.upstreamSince().length === 0 && /web_search/.test(run.stdout + run.stderr);
      check(failed, `expected a refusal naming web_search: ${run.stdout.slice(-600)}`);
    },
  },
];
