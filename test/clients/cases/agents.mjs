/** The OpenAI Agents SDK: a function-tool run, plain and streamed, over the Responses and the chat API, on both families. */
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { MODELS, WEATHER_PROMPT, WEATHER_RESULT, bothFamilies, checkRoundTrip } from './util.mjs';

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
    run: async (env) => checkRoundTrip((await run(agentFor(env, api, { reasoning: { effort: 'low' }, maxTokens: 4096 }), WEATHER_PROMPT)).finalOutput),
  });
}
