/**
 * What the kernel's one scan of a request body costs (`src/kernel/json-scan.ts`: depth, forbidden and
 * repeated keys, the model's span), next to the `JSON.parse` every body gets after it, on the bodies
 * clients send: a one-line chat, a coding agent's long turn (many messages, tool calls, tool results and
 * tool schemas), a body that is one long text, and an object of many keys (the scan's worst case).
 * Measured in-process, the median of many rounds, so a loaded machine moves both figures alike.
 *
 *   npm run build && node dist/bench/json-scan.js          (ROUNDS=… to change the sample count)
 *   BASELINE=/other/checkout/dist/src/kernel/json-scan.js node dist/bench/json-scan.js
 *                                                           (the same bodies through another build's scan)
 */
import { scanJson } from '../src/kernel/json-scan';

type Scan = (buf: Buffer, maxDepth: number) => unknown;

const ROUNDS = Number(process.env.ROUNDS ?? 200);
const DEPTH = 64;

/** A coding agent's turn: tool schemas, then `turns` rounds of a tool call and its result. */
function agentTurn(turns: number): string {
  const tools = Array.from({ length: 20 }, (_, i) => ({
    name: `tool_${i}`,
    description: `Does thing ${i} to the workspace. `.repeat(8),
    input_schema: { type: 'object', properties: { path: { type: 'string', description: 'A path' }, limit: { type: 'integer' }, flags: { type: 'array', items: { type: 'string' } } }, required: ['path'] },
  }));
  const messages: object[] = [{ role: 'user', content: [{ type: 'text', text: 'Fix the failing test in src/app.ts, please.' }] }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: 'Reading the file.' }, { type: 'tool_use', id: `toolu_${i}`, name: 'tool_1', input: { path: `lib/part_${i}.ts`, limit: 200 } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: [{ type: 'text', text: 'export function f() {\n  return 1;\n}\n'.repeat(30) }] }] });
  }
  return JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 8192, stream: true, system: [{ type: 'text', text: 'You are a coding agent.'.repeat(50) }], tools, messages });
}

const BODIES: readonly (readonly [string, Buffer])[] = [
  ['one-line chat', Buffer.from(JSON.stringify({ model: 'gpt-5-mini', messages: [{ role: 'user', content: 'Say hello.' }], stream: true }))],
  ['agent turn, 40 tool rounds', Buffer.from(agentTurn(40))],
  ['agent turn, 400 tool rounds', Buffer.from(agentTurn(400))],
  ['one 1 MiB text', Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'lorem ipsum '.repeat(87_382) }] }))],
  ['one object of 20,000 keys', Buffer.from(`{${Array.from({ length: 20_000 }, (_, i) => `"key_${i}":${i}`).join(',')}}`)],
];

/**
 * Median microseconds of each of `runs` over ROUNDS, after a warm-up; the runs take turns within each
 * round, so a change in the machine's load falls on all of them alike.
 */
function medians(runs: readonly (() => void)[]): number[] {
  for (let i = 0; i < Math.min(50, ROUNDS); i++) for (const run of runs) run();
  const samples = runs.map((): number[] => []);
  for (let i = 0; i < ROUNDS; i++) {
    runs.forEach((run, index) => {
      const started = process.hrtime.bigint();
      run();
      samples[index].push(Number(process.hrtime.bigint() - started) / 1000);
    });
  }
  return samples.map((list) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)]);
}

async function baseline(): Promise<Scan | null> {
  const file = process.env.BASELINE;
  if (file === undefined || file === '') return null;
  const loaded = (await import(file)) as { scanJson: Scan };
  return loaded.scanJson;
}

async function main(): Promise<void> {
  const other = await baseline();
  const rows: string[] = [];
  rows.push(`| body | bytes | scan µs |${other === null ? '' : ' baseline scan µs |'} JSON.parse µs | scan / parse |`);
  rows.push(`|---|---|---|${other === null ? '' : '---|'}---|---|`);
  for (const [name, buf] of BODIES) {
    const runs = [() => scanJson(buf, DEPTH), () => JSON.parse(buf.toString('utf8')) as unknown];
    if (other !== null) runs.splice(1, 0, () => other(buf, DEPTH));
    const figures = medians(runs);
    const [scan, parse] = [figures[0], figures[figures.length - 1]];
    const before = other === null ? null : figures[1];
    const cells = [name, String(buf.length), scan.toFixed(1), ...(before === null ? [] : [before.toFixed(1)]), parse.toFixed(1), `${((scan / parse) * 100).toFixed(1)}%`];
    rows.push(`| ${cells.join(' | ')} |`);
  }
  process.stdout.write(`${rows.join('\n')}\n`);
}

void main();
