/**
 * Bedrock's errors in the Anthropic vocabulary. Bedrock answers with its own exception names
 * (`x-amzn-errortype` header or `__type`, message under `message`/`Message`) and sends in-stream
 * exceptions as event-stream messages; both become Anthropic error objects, so native clients, the
 * translators and the failover policy read them as they read Anthropic's.
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
 */
import { object, tryParse } from '../../json';
import { anthropicErrorOfStatus, type AnthropicErrorKind } from '../../protocols/anthropic-messages/error-status';
import type { ErrorReply } from '../../wire/types';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** The Anthropic status and type that stand for each Bedrock exception. */
const BY_EXCEPTION: Readonly<Record<string, AnthropicErrorKind>> = {
  validationexception: { status: 400, type: 'invalid_request_error' },
  resourcenotfoundexception: { status: 404, type: 'not_found_error' },
  accessdeniedexception: { status: 403, type: 'permission_error' },
  throttlingexception: { status: 429, type: 'rate_limit_error' },
  servicequotaexceededexception: { status: 429, type: 'rate_limit_error' },
  modelnotreadyexception: { status: 429, type: 'rate_limit_error' },
  modeltimeoutexception: { status: 504, type: 'timeout_error' },
  modelerrorexception: { status: 500, type: 'api_error' },
  modelstreamerrorexception: { status: 500, type: 'api_error' },
  internalserverexception: { status: 500, type: 'api_error' },
  serviceunavailableexception: { status: 529, type: 'overloaded_error' },
};

/** `ThrottlingException:http://internal.amazon.com/...` or `com.amazon.bedrock#ThrottlingException` → `throttlingexception`. */
function exceptionName(raw: string): string {
  const name = raw.split(':')[0];
  return name.slice(name.lastIndexOf('#') + 1).toLowerCase();
}

/** The Anthropic error envelope for a Bedrock exception. */
function anthropicError(exception: string, message: string, status: number): { status: number; type: string; body: string } {
  const mapped = BY_EXCEPTION[exceptionName(exception)] ?? anthropicErrorOfStatus(status);
  return { ...mapped, body: JSON.stringify({ type: 'error', error: { type: mapped.type, message } }) };
}

function messageOf(payload: Record<string, unknown>, fallback: string): string {
  const message = payload.message ?? payload.Message;
  return typeof message === 'string' && message !== '' ? message : fallback;
}

/** A Bedrock error reply as the Anthropic error reply it stands for. */
export function bedrockErrorReply(status: number, body: Buffer, headers: Headers): ErrorReply {
  const parsed = tryParse(body.toString('utf8'));
  const payload = object(parsed);
  const header = headers['x-amzn-errortype'];
  const exception = typeof header === 'string' ? header : typeof payload.__type === 'string' ? payload.__type : '';
  const error = anthropicError(exception, messageOf(payload, `AWS Bedrock answered ${status}.`), status);
  return { status: error.status, body: Buffer.from(error.body) };
}

/** An in-stream exception message (`:message-type: exception`) as an Anthropic `error` event's data. */
export function streamExceptionData(exception: string, payload: string): string {
  const parsed = tryParse(payload);
  const fields = object(parsed);
  return anthropicError(exception, messageOf(fields, `AWS Bedrock reported ${exception} mid-stream.`), 500).body;
}
