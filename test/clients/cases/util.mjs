/** What the cases share: the checks, the weather tool every tool round trip uses, and the models. */

/** Models of the shipped gateway.yaml the cases run on, by family and by what they exercise. */
export const MODELS = {
  /** An Anthropic model with adaptive thinking. */
  claude: 'claude-sonnet-5',
  /** An Anthropic model with budget thinking (the thinking-block rule applies to it). */
  claudeBudget: 'claude-haiku-4-5-20251001',
  /** An OpenAI reasoning model. */
  gpt: 'gpt-5-mini',
  /** An OpenAI model that cannot reason. */
  gptPlain: 'gpt-4.1-mini',
};

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

export function checkEqual(actual, expected, what) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** The tool result every weather tool returns, which the model's final answer quotes back. */
export const WEATHER_RESULT = 'Sunny, 21 C';
export const WEATHER_PROMPT = 'What is the weather in Paris? Use get_weather with {"city":"Paris"}.';
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
  additionalProperties: false,
};

/** The final answer of a round trip quotes the tool result: proof the result reached the model. */
export function checkRoundTrip(text) {
  check(typeof text === 'string' && text.includes(WEATHER_RESULT), `the final answer does not quote the tool result: ${JSON.stringify(text)}`);
}

/** Expects `promise` to fail with a 4xx whose message contains `words`. */
export async function checkRefused(promise, words) {
  let error;
  try {
    await promise;
  } catch (err) {
    error = err;
  }
  check(error !== undefined, 'the request was not refused');
  const text = `${error.status ?? ''} ${error.message}`;
  check(/\b4\d\d\b/.test(text), `not a 4xx refusal: ${text}`);
  check(text.includes(words), `the refusal does not say "${words}": ${text}`);
}

/** One per family: a case list built for the Anthropic and the OpenAI model alike. */
export function bothFamilies(build) {
  return [build('anthropic', MODELS.claude), build('openai', MODELS.gpt)];
}
