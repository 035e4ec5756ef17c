/**
 * The WebSocket scenario of `npm run bench`: an agent loop of 20 turns on /v1/responses, over one
 * WebSocket (`response.create` frames, each turn naming the one before by `previous_response_id`, as
 * Codex and the Agents SDK send them) against the same loop as 20 streamed POSTs on one keep-alive
 * connection (each turn sending the whole conversation, as an HTTP client must). The upstream gets
 * the same requests either way; what differs is the client leg. Loops of each transport take turns.
 * Per model: the loop's total time and the gateway's CPU per turn (the socket's handshake included).
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { quantile } from './load';
import { totalCpuMillis } from './processes';

const TURNS = 20;

interface LoopGateway {
  readonly url: string;
  readonly key: string;
  readonly pid: number;
}

interface Item {
  readonly [field: string]: unknown;
}

interface LoopTally {
  readonly loopMs: number[];
  cpuMs: number;
  turns: number;
  errors: number;
}

/** One transport's way through a 20-turn loop; resolves with the turns that completed. */
type Loop = (gateway: LoopGateway, model: string) => Promise<number>;

const question = (turn: number): Item => ({ type: 'message', role: 'user', content: `Turn ${turn}: say hello.` });

/** The `response` of a `response.completed` event in `data`, or null. */
function completed(data: string): { id: string; output: Item[] } | null {
  if (!data.includes('"response.completed"')) return null;
  const event = JSON.parse(data) as { type?: string; response?: { id: string; output: Item[] } };
  return event.type === 'response.completed' && event.response !== undefined ? event.response : null;
}

/** The loop over one socket: each frame the new question and the id of the response before. */
const overSocket: Loop = (gateway, model) =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${gateway.key}` }, perMessageDeflate: false });
    let turn = 0;
    const send = (previous: string | null) => {
      ws.send(JSON.stringify({ type: 'response.create', model, store: false, input: [question(turn)], ...(previous !== null && { previous_response_id: previous }) }));
    };
    ws.on('open', () => send(null));
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      if (text.startsWith('{"type":"error"')) {
        ws.terminate();
        reject(new Error(`error frame: ${text.slice(0, 300)}`));
        return;
      }
      const response = completed(text);
      if (response === null) return;
      turn++;
      if (turn < TURNS) return send(response.id);
      ws.close(1000);
      resolve(turn);
    });
    ws.on('error', reject);
  });

/** The same loop as streamed POSTs on one keep-alive connection, each with the conversation so far. */
function overHttp(pool: Pool): Loop {
  return async (gateway, model) => {
    const conversation: Item[] = [];
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}` };
    for (let turn = 0; turn < TURNS; turn++) {
      conversation.push(question(turn));
      const res = await pool.request({ method: 'POST', path: '/v1/responses', headers, body: JSON.stringify({ model, store: false, stream: true, input: conversation }) });
      if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
      let buffered = '';
      let response: { output: Item[] } | null = null;
      for await (const chunk of res.body) {
        buffered += (chunk as Buffer).toString('utf8');
        let end = buffered.indexOf('\n\n');
        while (end !== -1) {
          const data = buffered
            .slice(0, end)
            .split('\n')
            .find((line) => line.startsWith('data: '));
          response ??= data === undefined ? null : completed(data.slice(6));
          buffered = buffered.slice(end + 2);
          end = buffered.indexOf('\n\n');
        }
      }
      if (response === null) throw new Error(`turn ${turn}: the stream ended without response.completed`);
      conversation.push(...response.output);
    }
    return TURNS;
  };
}

async function timedLoop(loop: Loop, gateway: LoopGateway, model: string, into: LoopTally): Promise<void> {
  const cpuBefore = totalCpuMillis([gateway.pid]);
  const start = performance.now();
  try {
    into.turns += await loop(gateway, model);
    into.loopMs.push(performance.now() - start);
  } catch {
    into.errors++;
  }
  into.cpuMs += totalCpuMillis([gateway.pid]) - cpuBefore;
}

interface LoopRow {
  readonly model: string;
  readonly transport: string;
  readonly tally: LoopTally;
}

export const WEBSOCKET_SCENARIO = `Responses agent loop, ${TURNS} turns: one WebSocket vs ${TURNS} streamed POSTs`;

/** Runs `loops` loops per transport and model (after one of each unmeasured), the transports taking turns. */
export async function measureTurnLoops(gateway: LoopGateway, models: readonly string[], loops: number): Promise<LoopRow[]> {
  const pool = new Pool(gateway.url, { connections: 1, pipelining: 1, keepAliveTimeout: 30_000 });
  const transports: [string, Loop][] = [
    ['WebSocket (previous_response_id)', overSocket],
    ['HTTP, streamed POSTs (keep-alive)', overHttp(pool)],
  ];
  const rows: LoopRow[] = [];
  try {
    for (const model of models) {
      const tallies = transports.map(() => ({ loopMs: [] as number[], cpuMs: 0, turns: 0, errors: 0 }));
      for (const [, loop] of transports) await loop(gateway, model);
      for (let i = 0; i < loops; i++) {
        const order = i % 2 === 0 ? [0, 1] : [1, 0];
        for (const t of order) await timedLoop(transports[t][1], gateway, model, tallies[t]);
      }
      transports.forEach(([transport], t) => rows.push({ model, transport, tally: tallies[t] }));
    }
  } finally {
    await pool.close();
  }
  return rows;
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–');

const LOOP_HEADER = '| model | client leg | loops | loop p50 ms | loop p90 ms | per turn ms | CPU ms per turn | errors |';
const LOOP_RULE = '|---|---|---:|---:|---:|---:|---:|---:|';

interface LoopStats {
  readonly loops: number[];
  readonly p50: number;
  readonly cpuPerTurn: number;
}

function stats(tally: LoopTally): LoopStats {
  const loops = [...tally.loopMs].sort((a, b) => a - b);
  return { loops, p50: quantile(loops, 0.5), cpuPerTurn: tally.turns === 0 ? Number.NaN : tally.cpuMs / tally.turns };
}

/** ` (-12%)`: `value` against `base`. */
const against = (value: number, base: number) => ` (${(value / base - 1) * 100 >= 0 ? '+' : ''}${fixed((value / base - 1) * 100, 0)}%)`;

/** The rows as a markdown table; a WebSocket row gives its change against the same model's HTTP row. */
export function loopTable(rows: readonly LoopRow[]): string[] {
  const lines = [LOOP_HEADER, LOOP_RULE];
  for (const row of rows) {
    const own = stats(row.tally);
    const http = row.transport.startsWith('WebSocket') ? rows.find((other) => other.model === row.model && other.transport.startsWith('HTTP')) : undefined;
    const base = http === undefined ? null : stats(http.tally);
    const loopVs = base === null ? '' : against(own.p50, base.p50);
    const cpuVs = base === null ? '' : against(own.cpuPerTurn, base.cpuPerTurn);
    lines.push(
      `| ${row.model} | ${row.transport} | ${own.loops.length} | ${fixed(own.p50, 1)}${loopVs} | ${fixed(quantile(own.loops, 0.9), 1)} | ${fixed(own.p50 / TURNS, 2)} | ${fixed(own.cpuPerTurn, 2)}${cpuVs} | ${row.tally.errors} |`,
    );
  }
  return lines;
}
