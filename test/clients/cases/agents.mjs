/** The OpenAI Agents SDK: a function-tool run, plain and streamed, over the Responses and the chat API, on both families. */
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { MODELS, WEATHER_PROMPT, WEATHER_RESULT, bothFamilies, check, checkRoundTrip } from './util.mjs';

setTracingDisabled(true);

function agentFor(env, api, modelSettings = {}) {
  setDefaultOpenAIClient(new OpenAI({ baseURL: `${env.url}/v1`, apiKey: env.key, maxRetries: 0 }));
  setOpenAIAPI(api);
  const weather = tool({ name: 'get_weather', description: 'Weather in a city', parameters: z.object({ city: z.string() }), execute: async () => WEATHER_RESULT });
  return new Agent({ name: 'Weather', instructions: 'Answer weather questions.', model: env.model, tools: [weather], modelSettings });
}

const RUNS = {
  'tool run': async (agent) => checkRoundTrip((await run(agent, WEATHER_PROMPT)).finalOutput),
  'tool run, streamed': async (agent) => {
    const result = await run(agent, WEATHER_PROMPT, { stream: true });
    await result.completed;
    checkRoundTrip(result.finalOutput);
  },
};

export const cases = ['responses', 'chat_completions'].flatMap((api) =>
  Object.entries(RUNS).flatMap(([featureName, runIt]) =>
    bothFamilies((family, model) => ({ client: `Agents SDK 0.20 (${api})`, feature: featureName, family, model, run: (env) => runIt(agentFor(env, api)) })),
  ),
);

/** Reasoning with a tool on a budget-thinking Claude model, over both APIs (fixes 2 and 4). */
for (const api of ['responses', 'chat_completions']) {
  cases.push({
    client: `Agents SDK 0.20 (${api})`, feature: 'reasoning + tool run', family: 'anthropic', model: MODELS.claudeBudget, fix: api === 'responses' ? 4 : 2,
    run: async (env) => {
      checkRoundTrip((await run(agentFor(env, api, { reasoning: { effort: 'low' }, maxTokens: 4096 }), WEATHER_PROMPT)).finalOutput);
      checkThinkingKept(env.upstreamSince());
    },
  });
}

/** Streamed over the Responses API, the reasoning item (and its signature) comes back whole too. */
cases.push({
  client: 'Agents SDK 0.20 (responses)', feature: 'reasoning + tool run, streamed', family: 'anthropic', model: MODELS.claudeBudget, fix: 4,
  run: async (env) => {
    const result = await run(agentFor(env, 'responses', { reasoning: { effort: 'low' }, maxTokens: 4096 }), WEATHER_PROMPT, { stream: true });
    await result.completed;
    checkRoundTrip(result.finalOutput);
    checkThinkingKept(env.upstreamSince());
  },
});

/**
 * Turn 2 (the tool result) still thinks, its assistant turn opening with the signed block of turn 1:
 * the mock checks the signature, and Tollgate turns thinking off rather than send an unsigned block,
 * so a signature lost on the way shows here as a continuation without thinking.
 */
function checkThinkingKept(log) {
  const sent = log.filter((entry) => entry.protocol === 'anthropic' && entry.reply !== undefined).map((entry) => entry.body);
  check(sent.length >= 2, `expected a tool continuation upstream, got ${sent.length} request(s)`);
  const continuation = sent[sent.length - 1];
  check(continuation.thinking?.type === 'enabled', `turn ${sent.length} was sent without thinking: the signed block of turn 1 was lost`);
  const assistant = continuation.messages.filter((message) => message.role === 'assistant').at(-1);
  check(assistant?.content?.[0]?.type === 'thinking', 'the continuation\'s assistant turn does not open with its signed thinking');
}
