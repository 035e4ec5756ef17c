/** The official `openai` SDK's helpers, base URL `<tollgate>/v1`, on both model families. */
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { MODELS, WEATHER_PROMPT, WEATHER_RESULT, WEATHER_SCHEMA, bothFamilies, check, checkEqual, checkRoundTrip } from './util.mjs';

const client = (env) => new OpenAI({ baseURL: `${env.url}/v1`, apiKey: env.key, maxRetries: 0 });
const CLIENT = 'openai 7.57';

export const cases = [
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'chat runTools (tool loop)', family, model,
    async run(env) {
      const runner = client(env).chat.completions.runTools({
        model: env.model,
        messages: [{ role: 'user', content: WEATHER_PROMPT }],
        tools: [zodFunction({ name: 'get_weather', parameters: z.object({ city: z.string() }), function: () => WEATHER_RESULT })],
      });
      checkRoundTrip(await runner.finalContent());
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'chat .parse (structured output)', family, model,
    async run(env) {
      const completion = await client(env).chat.completions.parse({
        model: env.model,
        messages: [{ role: 'user', content: 'Give me a city and its population.' }],
        response_format: zodResponseFormat(z.object({ city: z.string(), population: z.number() }), 'city'),
      });
      const parsed = completion.choices[0].message.parsed;
      check(typeof parsed?.city === 'string' && typeof parsed.population === 'number', `not parsed: ${JSON.stringify(parsed)}`);
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'chat stream helper', family, model,
    async run(env) {
      const stream = client(env).chat.completions.stream({ model: env.model, messages: [{ role: 'user', content: 'Say hello.' }], stream_options: { include_usage: true } });
      let text = '';
      stream.on('content', (delta) => { text += delta; });
      const final = await stream.finalChatCompletion();
      check(text.includes('Hello') && final.usage?.total_tokens > 0, `stream text ${JSON.stringify(text)}, usage ${JSON.stringify(final.usage)}`);
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'responses.stream + tool round trip', family, model,
    async run(env) {
      const openai = client(env);
      const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER_SCHEMA, strict: true }];
      const first = await openai.responses.stream({ model: env.model, input: WEATHER_PROMPT, tools }).finalResponse();
      const call = first.output.find((item) => item.type === 'function_call');
      check(call?.name === 'get_weather' && JSON.parse(call.arguments).city === 'Paris', `no weather call: ${JSON.stringify(first.output)}`);
      const input = [{ role: 'user', content: WEATHER_PROMPT }, ...first.output, { type: 'function_call_output', call_id: call.call_id, output: WEATHER_RESULT }];
      const second = await openai.responses.stream({ model: env.model, input, tools }).finalResponse();
      checkRoundTrip(second.output_text);
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'responses.parse (text.format)', family, model,
    async run(env) {
      const response = await client(env).responses.parse({ model: env.model, input: 'A city, please.', text: { format: zodTextFormat(z.object({ city: z.string() }), 'city') } });
      check(typeof response.output_parsed?.city === 'string', `not parsed: ${JSON.stringify(response.output_parsed)}`);
    },
  })),
  {
    client: CLIENT, feature: 'reasoning + tools via chat (no thinking echoed)', family: 'anthropic', model: MODELS.claudeBudget, fix: 2,
    async run(env) {
      const runner = client(env).chat.completions.runTools({
        model: env.model,
        reasoning_effort: 'low',
        max_completion_tokens: 4096,
        messages: [{ role: 'user', content: WEATHER_PROMPT }],
        tools: [zodFunction({ name: 'get_weather', parameters: z.object({ city: z.string() }), function: () => WEATHER_RESULT })],
      });
      checkRoundTrip(await runner.finalContent());
    },
  },
  {
    client: CLIENT, feature: 'responses previous_response_id', family: 'anthropic', model: MODELS.claude, fix: 4,
    async run(env) {
      const openai = client(env);
      const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER_SCHEMA, strict: true }];
      const first = await openai.responses.create({ model: env.model, input: WEATHER_PROMPT, tools });
      const call = first.output.find((item) => item.type === 'function_call');
      check(call !== undefined, 'no function call');
      const second = await openai.responses.create({
        model: env.model, previous_response_id: first.id, tools,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: WEATHER_RESULT }],
      });
      checkRoundTrip(second.output_text);
    },
  },
  {
    client: CLIENT, feature: 'responses store: false reported honestly', family: 'anthropic', model: MODELS.claude, fix: 4,
    async run(env) {
      const response = await client(env).responses.create({ model: env.model, input: 'Say hello.', store: false });
      checkEqual(response.store, false, 'store');
    },
  },
];
