/**
 * Codex CLI 0.169 set up the common way: its built-in OpenAI provider with `openai_base_url` pointed
 * at Tollgate and the key in CODEX_API_KEY (the built-in provider reads no other variable). So set up,
 * Codex opens a WebSocket to GET /v1/responses and sends `response.create` frames. Each case checks
 * that the run went over the socket (an upgrade, no POST), and that what the ledger charged for the
 * run adds up to the usage Codex itself reports. The timing case sets the built-in provider's first
 * turn beside a custom `[model_providers]` entry's (HTTP), and with `server.websocket: false` Codex
 * falls back to HTTP on the 426 at once, with no retries.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTollgate } from '../gateway.mjs';
import { runCliSession } from './cli.mjs';
import { EXEC_FLAGS, api, lastMessage } from './codex.mjs';
import { bothFamilies, check, checkEqual } from './util.mjs';

const CLIENT = 'Codex CLI 0.169 (built-in provider)';
const SECRET = 'tollgate-codex-ws-note';
const REMEMBER = 'tollgate-pineapple';
/** The retry stall a 405 or 404 used to cost before Codex fell back (five attempts with backoff). */
const STALL_MS = 7000;

const builtInConfig = (url, model) => [`model = "${model}"`, `openai_base_url = "${url}/v1"`, '[analytics]', 'enabled = false'];
const customConfig = (url, model) => [
  `model = "${model}"`,
  'model_provider = "tollgate"',
  '[model_providers.tollgate]',
  'name = "Tollgate"',
  `base_url = "${url}/v1"`,
  'env_key = "CODEX_API_KEY"',
  'wire_api = "responses"',
  '[analytics]',
  'enabled = false',
];

/** `codex exec` for the first prompt, `codex exec resume --last` for each next one, with `config` lines. */
async function codexRuns(key, config, prompts, afterRun = undefined) {
  const argsList = prompts.map((prompt, i) => (i === 0 ? ['exec', ...EXEC_FLAGS, prompt] : ['exec', ...EXEC_FLAGS, 'resume', '--last', prompt]));
  return runCliSession('codex', argsList, {
    env: { CODEX_API_KEY: key },
    afterRun,
    setup: (home) => {
      mkdirSync(join(home, '.codex'));
      writeFileSync(join(home, '.codex', 'config.toml'), `${config.join('\n')}\n`);
      writeFileSync(join(home, 'note.txt'), `${SECRET}\n`);
    },
  });
}

/** The usage Codex reports for the run (its `turn.completed` event). */
function reportedUsage(run) {
  const { events } = lastMessage(run.stdout);
  const turns = events.filter((event) => event.type === 'turn.completed');
  check(turns.length === 1, `Codex reported ${turns.length} completed turns (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
  return turns[0].usage;
}

/** Every row of the suite account's ledger, by request id. */
async function ledgerIds(env) {
  return new Set((await api(env, '/usage?limit=1000')).usage.map((row) => row.request_id));
}

/**
 * The charges made since `before`, summed as Codex counts: its input tokens include the cached ones,
 * which the ledger keeps apart. Charges are written in batches, so this waits (a little) for them.
 */
async function chargedSince(env, before, expectedCount) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = (await api(env, '/usage?limit=1000')).usage.filter((row) => !before.has(row.request_id));
    if (rows.length >= expectedCount || Date.now() > deadline) {
      const sum = (field) => rows.reduce((total, row) => total + Number(row[field]), 0);
      const cached = sum('cache_read_tokens');
      return { rows, usage: { input_tokens: sum('input_tokens') + cached + sum('cache_write_tokens') + sum('cache_write_1h_tokens'), cached_input_tokens: cached, output_tokens: sum('output_tokens') } };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The requests that reached the upstream in `entries` (the mock's log): one per model call. */
function upstreamCalls(env, family) {
  return env.upstreamSince().filter((entry) => entry.protocol === family && entry.reply !== undefined);
}

/** The run reached Tollgate over a WebSocket: at least one upgrade, and not one POST /v1/responses. */
function checkOverSocket(env) {
  const seen = env.transportSince();
  const upgrades = seen.filter((entry) => entry.kind === 'upgrade').length;
  const posts = seen.filter((entry) => entry.kind === 'post').length;
  check(upgrades > 0 && posts === 0, `expected the run over a WebSocket; Tollgate saw ${upgrades} upgrade(s) and ${posts} POST /v1/responses (an HTTP fallback)`);
}

/**
 * Runs one session of `prompts` over the socket and checks, after each run, the ledger against the
 * usage Codex reports: a first run reports its own calls, a resumed run the session's running total
 * (its turns before included), so each run is set against every charge of the session so far.
 */
async function session(env, family, prompts) {
  const before = await ledgerIds(env);
  const runs = await codexRuns(env.key, builtInConfig(env.url, env.model), prompts, async (run, index) => {
    const calls = upstreamCalls(env, family).length;
    check(calls > 0, `no request reached the upstream (exit ${run.code}): ${run.stderr.slice(-600)}`);
    const { rows, usage } = await chargedSince(env, before, calls);
    checkEqual(rows.length, calls, `charges after run ${index + 1} (one per model call)`);
    const { input_tokens, cached_input_tokens, output_tokens } = reportedUsage(run);
    checkEqual(usage, { input_tokens, cached_input_tokens, output_tokens }, `the ledger after run ${index + 1} against the usage Codex reported`);
  });
  checkOverSocket(env);
  return runs;
}

async function textAnswer(env, family) {
  const [run] = await session(env, family, ['Say hello.']);
  const { text } = lastMessage(run.stdout);
  check(text.includes('Hello from'), `no answer (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
}

async function shellRoundTrip(env, family) {
  const [run] = await session(env, family, ['What does my note say? Use exec_command with {"cmd":"cat note.txt"}']);
  const { events, text } = lastMessage(run.stdout);
  const ran = events.some((event) => event.type === 'item.completed' && event.item?.type === 'command_execution');
  check(ran, `Codex ran no command (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
  check(text.includes(SECRET), `the answer does not quote the command's output: ${JSON.stringify(text)}`);
  check(upstreamCalls(env, family).length >= 2, 'the command output never went back to the model');
}

/** `codex exec`, then `codex exec resume --last`: the resumed turn goes over a socket of its own and carries the first turn. */
async function resumedTurn(env, family) {
  const [first, resumed] = await session(env, family, [`Remember the word ${REMEMBER}. Say hello.`, 'Say hello again.']);
  check(lastMessage(first.stdout).text.includes('Hello from'), `the first turn got no answer (exit ${first.code}): ${first.stdout.slice(-1200)}`);
  check(lastMessage(resumed.stdout).text.includes('Hello from'), `the resumed turn got no answer (exit ${resumed.code}): ${resumed.stdout.slice(-1200)} ${resumed.stderr.slice(-600)}`);
  const last = upstreamCalls(env, family).at(-1);
  check(JSON.stringify(last.body).includes(REMEMBER), 'the resumed turn reached the model without the first turn');
  const upgrades = env.transportSince().filter((entry) => entry.kind === 'upgrade').length;
  check(upgrades >= 2, `each run opens its own socket; Tollgate saw ${upgrades} upgrade(s)`);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const TIMED_RUNS = 5;

/**
 * The first turn of a session (one `codex exec`, whole process) with the built-in provider (over the
 * socket) and with a custom provider (over HTTP), taking turns. Printed as figures; the bound only
 * catches a stall (the 405 retries cost seconds), not a slow machine.
 */
async function firstTurnTimed(env) {
  const times = { builtIn: [], custom: [] };
  for (let i = 0; i < TIMED_RUNS; i++) {
    for (const [setup, config] of [['builtIn', builtInConfig], ['custom', customConfig]]) {
      const [run] = await codexRuns(env.key, config(env.url, env.model), ['Say hello.']);
      check(lastMessage(run.stdout).text.includes('Hello from'), `${setup}: no answer (exit ${run.code}): ${run.stdout.slice(-800)} ${run.stderr.slice(-400)}`);
      times[setup].push(run.ms);
    }
  }
  const seen = env.transportSince();
  checkEqual(seen.filter((entry) => entry.kind === 'upgrade').length, TIMED_RUNS, 'upgrades (one per built-in run, none per custom run)');
  const builtIn = median(times.builtIn);
  const custom = median(times.custom);
  check(builtIn < custom * 1.5 + 2000, `the built-in provider's first turn took ${builtIn.toFixed(0)} ms against ${custom.toFixed(0)} ms: a stall`);
  const list = (values) => values.map((ms) => ms.toFixed(0)).join(', ');
  return `first turn (codex exec, median of ${TIMED_RUNS}): built-in provider over WebSocket ${builtIn.toFixed(0)} ms [${list(times.builtIn)}], custom provider over HTTP ${custom.toFixed(0)} ms [${list(times.custom)}], ratio ${(builtIn / custom).toFixed(2)}`;
}

/**
 * `server.websocket: false`: the upgrade gets 426 and Codex sends its POST at once: one upgrade (no
 * retries), and the POST well within half the stall the retries used to cost.
 */
async function fallsBack(env, family) {
  const off = await startTollgate(env.upstream.url, { server: ['websocket: false'] });
  try {
    const [run] = await codexRuns(off.key, builtInConfig(off.url, env.model), ['Say hello.']);
    check(lastMessage(run.stdout).text.includes('Hello from'), `no answer (exit ${run.code}): ${run.stdout.slice(-1200)} ${run.stderr.slice(-600)}`);
    const upgrades = off.transport.filter((entry) => entry.kind === 'upgrade');
    const posts = off.transport.filter((entry) => entry.kind === 'post');
    check(upgrades.length === 1, `Codex tried the socket ${upgrades.length} times; one 426 should be enough`);
    check(posts.length >= 1, 'Codex never fell back to POST /v1/responses');
    // Where a retry stall shows: between the refused upgrade and the POST. The whole run is printed,
    // not bounded, since on a loaded machine Codex's own start-up alone can take seconds.
    const gap = posts[0].at - upgrades[0].at;
    check(gap < STALL_MS / 2, `${gap} ms from the 426 to the POST: a retry stall`);
    check(upstreamCalls(env, family).length > 0, 'no request reached the upstream');
    return `websocket: false → 426, one upgrade, POST ${gap} ms later; whole run ${run.ms.toFixed(0)} ms`;
  } finally {
    await off.stop();
  }
}

export const cases = [
  ...bothFamilies((family, model) => ({ client: CLIENT, feature: 'codex exec over WebSocket, text answer (ledger = reported usage)', family, model, run: (env) => textAnswer(env, family) })),
  ...bothFamilies((family, model) => ({ client: CLIENT, feature: 'codex exec over WebSocket, shell tool round trip', family, model, run: (env) => shellRoundTrip(env, family) })),
  ...bothFamilies((family, model) => ({ client: CLIENT, feature: 'codex exec resume --last over WebSocket', family, model, run: (env) => resumedTurn(env, family) })),
  ...bothFamilies((family, model) => ({ client: CLIENT, feature: 'first turn timed against a custom provider (HTTP)', family, model, run: (env) => firstTurnTimed(env) })),
  ...bothFamilies((family, model) => ({ client: CLIENT, feature: 'server.websocket: false → falls back to HTTP, no stall', family, model, run: (env) => fallsBack(env, family) })),
];
