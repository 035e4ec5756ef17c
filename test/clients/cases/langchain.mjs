/** LangChain JS: ChatOpenAI (chat and Responses API) and ChatAnthropic, on both families. */
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { WEATHER_PROMPT, WEATHER_RESULT, bothFamilies, check, checkRoundTrip } from './util.mjs';

const MODELS = {
  'ChatOpenAI (chat)': (env) => new ChatOpenAI({ model: env.model, apiKey: env.key, configuration: { baseURL: `${env.url}/v1` }, maxRetries: 0 }),
  'ChatOpenAI (Responses)': (env) => new ChatOpenAI({ model: env.model, apiKey: env.key, configuration: { baseURL: `${env.url}/v1` }, useResponsesApi: true, maxRetries: 0 }),
  ChatAnthropic: (env) => new ChatAnthropic({ model: env.model, apiKey: env.key, anthropicApiUrl: env.url, maxRetries: 0 }),
};

const weatherTool = { name: 'get_weather', description: 'Weather in a city', schema: z.object({ city: z.string() }) };
const textOf = (message) => (typeof message.content === 'string' ? message.content : message.content.filter((part) => part.type === 'text').map((part) => part.text).join(''));

const FEATURES = {
  invoke: async (llm) => {
    const reply = await llm.invoke('Say hello.');
    check(textOf(reply).includes('Hello'), `reply ${JSON.stringify(reply.content)}`);
  },
  stream: async (llm) => {
    let text = '';
    for await (const chunk of await llm.stream('Say hello.')) text += textOf(chunk);
    check(text.includes('Hello'), `streamed ${JSON.stringify(text)}`);
  },
  'bindTools round trip': async (llm) => {
    const withTools = llm.bindTools([weatherTool]);
    const messages = [new HumanMessage(WEATHER_PROMPT)];
    const first = await withTools.invoke(messages);
    const call = first.tool_calls?.[0];
    check(call?.name === 'get_weather' && call.args.city === 'Paris', `no weather call: ${JSON.stringify(first.tool_calls)}`);
    messages.push(first, new ToolMessage({ tool_call_id: call.id, content: WEATHER_RESULT }));
    checkRoundTrip(textOf(await withTools.invoke(messages)));
  },
  withStructuredOutput: async (llm) => {
    const result = await llm.withStructuredOutput(z.object({ city: z.string() })).invoke('A city, please.');
    check(typeof result.city === 'string', `structured ${JSON.stringify(result)}`);
  },
};

export const cases = Object.entries(MODELS).flatMap(([clientName, make]) =>
  Object.entries(FEATURES).flatMap(([featureName, feature]) =>
    bothFamilies((family, model) => ({ client: `LangChain ${clientName}`, feature: featureName, family, model, run: (env) => feature(make(env)) })),
  ),
);
