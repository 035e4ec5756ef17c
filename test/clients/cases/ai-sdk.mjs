/** The Vercel AI SDK 7: `@ai-sdk/openai` `.chat()` and `.responses()`, and `@ai-sdk/anthropic`, on both families. */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { MODELS, WEATHER_PROMPT, WEATHER_RESULT, bothFamilies, check, checkRoundTrip } from './util.mjs';

// The SDK's console warnings (unknown models' limits, deprecations) are not what this suite checks.
globalThis.AI_SDK_LOG_WARNINGS = false;

const PROVIDERS = {
  'chat()': (env) => createOpenAI({ baseURL: `${env.url}/v1`, apiKey: env.key }).chat(env.model),
  'responses()': (env) => createOpenAI({ baseURL: `${env.url}/v1`, apiKey: env.key }).responses(env.model),
  createAnthropic: (env) => createAnthropic({ baseURL: `${env.url}/v1`, apiKey: env.key })(env.model),
};

const weather = tool({ description: 'Weather in a city', inputSchema: z.object({ city: z.string() }), execute: async () => WEATHER_RESULT });

const FEATURES = {
  'generateText tool loop': async (model) => {
    const result = await generateText({ model, prompt: WEATHER_PROMPT, tools: { get_weather: weather }, stopWhen: stepCountIs(3), maxRetries: 0 });
    checkRoundTrip(result.text);
  },
  'streamText tool loop': async (model) => {
    const result = streamText({ model, prompt: WEATHER_PROMPT, tools: { get_weather: weather }, stopWhen: stepCountIs(3), maxRetries: 0 });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    checkRoundTrip(text);
  },
  generateObject: async (model) => {
    const { object } = await generateObject({ model, schema: z.object({ city: z.string(), population: z.number() }), prompt: 'A city and its population.', maxRetries: 0 });
    check(typeof object.city === 'string' && typeof object.population === 'number', `object ${JSON.stringify(object)}`);
  },
};

export const cases = Object.entries(PROVIDERS).flatMap(([providerName, provider]) =>
  Object.entries(FEATURES).flatMap(([featureName, feature]) =>
    bothFamilies((family, model) => ({
      client: `AI SDK 7 ${providerName}`,
      feature: featureName,
      family,
      model,
      fix: providerName === 'responses()' && family === 'anthropic' ? 4 : undefined,
      run: (env) => feature(provider(env)),
    })),
  ),
);

/**
 * Reasoning with tools on a budget-thinking Claude model: the chat provider never sends the signed
 * thinking back (fix 2); the Responses provider refers to the reasoning item it got by
 * `item_reference` (fix 4), which must resolve to the item Tollgate minted.
 */
async function reasoningToolLoop(model, providerOptions) {
  const result = await generateText({ model, prompt: WEATHER_PROMPT, tools: { get_weather: weather }, stopWhen: stepCountIs(3), maxRetries: 0, maxOutputTokens: 4096, providerOptions });
  checkRoundTrip(result.text);
}

cases.push(
  {
    client: 'AI SDK 7 chat()', feature: 'reasoning + tool loop', family: 'anthropic', model: MODELS.claudeBudget, fix: 2,
    run: (env) => reasoningToolLoop(PROVIDERS['chat()'](env), { openai: { reasoningEffort: 'low' } }),
  },
  {
    client: 'AI SDK 7 responses()', feature: 'reasoning + tool loop (item_reference)', family: 'anthropic', model: MODELS.claudeBudget, fix: 4,
    async run(env) {
      // The SDK knows no claude-* id, so it is told this model reasons; it then sends reasoning items back.
      await reasoningToolLoop(PROVIDERS['responses()'](env), { openai: { reasoningEffort: 'low', forceReasoning: true } });
      const continued = env.upstreamSince().find((entry) => entry.body.messages?.length === 3);
      check(continued?.body.messages[1].content[0]?.type === 'thinking', `the minted reasoning item did not come back as signed thinking: ${JSON.stringify(continued?.body.messages[1])}`);
    },
  },
);
