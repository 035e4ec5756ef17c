/** The official `@anthropic-ai/sdk` helpers, base URL `<tollgate>` (no /v1), on both model families. */
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { z } from 'zod';
import { WEATHER_PROMPT, WEATHER_RESULT, WEATHER_SCHEMA, bothFamilies, check, checkRoundTrip } from './util.mjs';

const client = (env) => new Anthropic({ baseURL: env.url, apiKey: env.key, maxRetries: 0 });
const CLIENT = '@anthropic-ai/sdk 1.12';
const textOf = (message) => message.content.filter((block) => block.type === 'text').map((block) => block.text).join('');

const weatherTool = () => betaZodTool({ name: 'get_weather', description: 'Weather in a city', inputSchema: z.object({ city: z.string() }), run: () => WEATHER_RESULT });

export const cases = [
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'messages.stream', family, model,
    async run(env) {
      const stream = client(env).messages.stream({ model: env.model, max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }] });
      let text = '';
      stream.on('text', (delta) => { text += delta; });
      const final = await stream.finalMessage();
      check(text.includes('Hello') && final.usage.output_tokens > 0, `text ${JSON.stringify(text)}`);
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'beta toolRunner (threads by default)', family, model, fix: family === 'openai' ? 1 : undefined,
    async run(env) {
      const runner = client(env).beta.messages.toolRunner({
        model: env.model, max_tokens: 1024, messages: [{ role: 'user', content: WEATHER_PROMPT }], tools: [weatherTool()],
      });
      const final = await runner.runUntilDone();
      checkRoundTrip(textOf(final));
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'messages.create tool round trip + thinking', family, model,
    async run(env) {
      const anthropic = client(env);
      const params = { model: env.model, max_tokens: 4096, thinking: { type: 'adaptive' }, tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }] };
      const messages = [{ role: 'user', content: WEATHER_PROMPT }];
      const first = await anthropic.messages.create({ ...params, messages });
      const call = first.content.find((block) => block.type === 'tool_use');
      check(call?.input.city === 'Paris', `no weather call: ${JSON.stringify(first.content)}`);
      messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: WEATHER_RESULT }] });
      checkRoundTrip(textOf(await anthropic.messages.create({ ...params, messages })));
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'beta messages.parse (structured output)', family, model,
    async run(env) {
      const { betaZodOutputFormat } = await import('@anthropic-ai/sdk/helpers/beta/zod');
      const message = await client(env).beta.messages.parse({
        model: env.model, max_tokens: 1024, messages: [{ role: 'user', content: 'A city, please.' }],
        output_format: betaZodOutputFormat(z.object({ city: z.string() })),
      });
      check(typeof message.parsed_output?.city === 'string', `not parsed: ${JSON.stringify(message.content)}`);
    },
  })),
  ...bothFamilies((family, model) => ({
    client: CLIENT, feature: 'countTokens', family, model,
    async run(env) {
      const count = await client(env).messages.countTokens({ model: env.model, messages: [{ role: 'user', content: 'Hello' }] });
      check(count.input_tokens > 0, `count ${JSON.stringify(count)}`);
    },
  })),
];
