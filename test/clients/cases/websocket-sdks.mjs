/**
 * The SDKs' WebSocket mode of the Responses API against Tollgate, on both families: the `openai`
 * SDK's `ResponsesWS` (openai/resources/responses/ws) and the Agents SDK's `OpenAIResponsesWSModel`
 * (an `OpenAIProvider` with `useResponsesWebSocket`). Each runs a tool loop of several turns over one
 * socket, every turn after the first continuing by `previous_response_id`, which Tollgate resolves
 * from what it kept of the socket's responses: the upstream gets whole requests, and one charge per
 * response.
 */
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { WebSocket } from 'ws';
import { z } from 'zod';
import { api } from './codex.mjs';
import { WEATHER_PROMPT, WEATHER_RESULT, WEATHER_SCHEMA, bothFamilies, check, checkEqual, checkRoundTrip } from './util.mjs';

setTracingDisabled(true);
// The Agents SDK's WebSocket model opens its socket with the global WebSocket, which Node has from 22
// on (the version these SDKs ask for); on the suite's Node 20 the `ws` package, which the openai SDK
// itself uses, stands in.
globalThis.WebSocket ??= WebSocket;

const ROME_PROMPT = 'And in Rome? Use get_weather with {"city":"Rome"}';
const client = (env) => new OpenAI({ baseURL: `${env.url}/v1`, apiKey: env.key, maxRetries: 0 });

/** Sends one `response.create` on `ws`; resolves with the completed response, rejects on an error event. */
function respond(ws, body) {
  return new Promise((resolve, reject) => {
    const off = () => {
      ws.off('event', onEvent);
      ws.off('error', onError);
    };
    const onEvent = (event) => {
      if (event.type === 'response.completed') {
        off();
        resolve(event.response);
      } else if (event.type === 'response.failed' || event.type === 'response.incomplete') {
        off();
        reject(new Error(`${event.type}: ${JSON.stringify(event.response?.error ?? event.response?.incomplete_details)}`));
      }
    };
    const onError = (error) => {
      off();
      reject(error);
    };
    ws.on('event', onEvent);
    ws.on('error', onError);
    ws.send({ type: 'response.create', ...body });
  });
}

/** The model calls made during the case: the requests the mock upstream answered. */
const upstreamCalls = (env, family) => env.upstreamSince().filter((entry) => entry.protocol === family && entry.reply !== undefined);

/**
 * What every case checks once its loop is over: one socket and no HTTP fallback, every call sent
 * upstream whole (no `previous_response_id` left for the provider to resolve), one charge per call.
 */
async function checkSocketLoop(env, family, before, turns) {
  const seen = env.transportSince();
  checkEqual(
    { upgrades: seen.filter((entry) => entry.kind === 'upgrade').length, posts: seen.filter((entry) => entry.kind === 'post').length },
    { upgrades: 1, posts: 0 },
    'how the loop reached Tollgate (one WebSocket, no POST)',
  );
  const calls = upstreamCalls(env, family);
  checkEqual(calls.length, turns, 'model calls');
  for (const call of calls) check(call.body.previous_response_id === undefined, `a turn went upstream naming ${call.body.previous_response_id} instead of its conversation`);
  // The last call carries the whole loop: the Paris round trip before the Rome one.
  check(JSON.stringify(calls.at(-1).body).includes(WEATHER_RESULT) && JSON.stringify(calls.at(-1).body).includes('Paris'), 'the last turn reached the model without the turns before it');
  const deadline = Date.now() + 5000;
  let charged = [];
  while (charged.length < turns && Date.now() < deadline) {
    charged = (await api(env, '/usage?limit=1000')).usage.filter((row) => !before.has(row.request_id));
    if (charged.length < turns) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  checkEqual(charged.length, turns, 'charges (one per response)');
}

const ledgerIds = async (env) => new Set((await api(env, '/usage?limit=1000')).usage.map((row) => row.request_id));

/** `ResponsesWS`: Paris, its tool result, Rome, its tool result: four responses on one socket. */
async function responsesWsLoop(env, family) {
  const before = await ledgerIds(env);
  const ws = new ResponsesWS(client(env));
  try {
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather in a city', parameters: WEATHER_SCHEMA, strict: true }];
    let previous = null;
    for (const [city, prompt] of [['Paris', WEATHER_PROMPT], ['Rome', ROME_PROMPT]]) {
      const asked = await respond(ws, { model: env.model, input: prompt, tools, ...(previous && { previous_response_id: previous }) });
      const call = asked.output.find((item) => item.type === 'function_call');
      check(call?.name === 'get_weather' && JSON.parse(call.arguments).city === city, `no weather call for ${city}: ${JSON.stringify(asked.output)}`);
      const answered = await respond(ws, { model: env.model, previous_response_id: asked.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: WEATHER_RESULT }], tools });
      const text = answered.output.filter((item) => item.type === 'message').flatMap((item) => item.content).map((part) => part.text ?? '').join('');
      checkRoundTrip(text);
      previous = answered.id;
    }
  } finally {
    ws.close({ code: 1000, reason: 'done' });
  }
  await checkSocketLoop(env, family, before, 4);
}

/** The Agents SDK on its WebSocket model: two runs of a tool loop, the second continuing the first by previousResponseId. */
async function agentsWsLoop(env, family, stream) {
  const before = await ledgerIds(env);
  const provider = new OpenAIProvider({ openAIClient: client(env), useResponses: true, useResponsesWebSocket: true });
  try {
    const model = await provider.getModel(env.model);
    check(model.constructor.name === 'OpenAIResponsesWSModel', `the provider gave a ${model.constructor.name}, not the WebSocket model`);
    const runner = new Runner({ modelProvider: provider });
    const weather = tool({ name: 'get_weather', description: 'Weather in a city', parameters: z.object({ city: z.string() }), execute: async () => WEATHER_RESULT });
    const agent = new Agent({ name: 'Weather', instructions: 'Answer weather questions.', model: env.model, tools: [weather] });
    const runOnce = async (input, options) => {
      const result = await runner.run(agent, input, { ...options, stream });
      if (stream) await result.completed;
      checkRoundTrip(result.finalOutput);
      return result;
    };
    const first = await runOnce(WEATHER_PROMPT, {});
    check(typeof first.lastResponseId === 'string', 'the run kept no response id');
    await runOnce(ROME_PROMPT, { previousResponseId: first.lastResponseId });
  } finally {
    await provider.close();
  }
  await checkSocketLoop(env, family, before, 4);
}

export const cases = [
  ...bothFamilies((family, model) => ({ client: 'openai 7.57 ResponsesWS', feature: 'tool loop over one socket (previous_response_id)', family, model, run: (env) => responsesWsLoop(env, family) })),
  ...bothFamilies((family, model) => ({ client: 'Agents SDK 0.20 (OpenAIResponsesWSModel)', feature: 'tool runs over one socket (previousResponseId)', family, model, run: (env) => agentsWsLoop(env, family, false) })),
  ...bothFamilies((family, model) => ({ client: 'Agents SDK 0.20 (OpenAIResponsesWSModel)', feature: 'tool runs over one socket, streamed', family, model, run: (env) => agentsWsLoop(env, family, true) })),
];
