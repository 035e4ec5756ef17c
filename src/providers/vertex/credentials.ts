/**
 * Where Vertex access tokens come from: a service-account key (JWT bearer grant, RS256, posted to the
 * key's own `token_uri` with `aud` = `token_uri`, as Google's Python and Go libraries do), gcloud's
 * user credentials (refresh-token grant), or the metadata server of the machine Tollgate runs on.
 * With no `credentials_file`, application default credentials are looked up in Google's order.
 * https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests
 */
import { createSign } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const METADATA_TOKEN_URL = 'http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token';
/** Lifetime asked for in an assertion; Google's maximum. */
const ASSERTION_SECONDS = 3600;

/** How to ask for a token: the URL, and the request's headers and body. */
interface TokenRequest {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body: string | null;
}

export type CredentialSource = { readonly describe: string; tokenRequest(nowSeconds: number): TokenRequest };

interface ServiceAccountKey {
  readonly type: 'service_account';
  readonly client_email: string;
  readonly private_key: string;
  readonly private_key_id?: string;
  readonly token_uri?: string;
}

interface AuthorizedUser {
  readonly type: 'authorized_user';
  readonly client_id: string;
  readonly client_secret: string;
  readonly refresh_token: string;
  readonly token_uri?: string;
}

const base64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');

/** A signed RS256 JWT asserting the service account, for the JWT bearer grant (RFC 7523). */
function serviceAccountAssertion(key: Pick<ServiceAccountKey, 'client_email' | 'private_key' | 'private_key_id'>, audience: string, nowSeconds: number): string {
  const header = { alg: 'RS256', typ: 'JWT', ...(key.private_key_id !== undefined && { kid: key.private_key_id }) };
  const claims = { iss: key.client_email, scope: SCOPE, aud: audience, iat: nowSeconds, exp: nowSeconds + ASSERTION_SECONDS };
  const unsigned = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  const signature = createSign('RSA-SHA256').update(unsigned).sign(key.private_key);
  return `${unsigned}.${base64url(signature)}`;
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function fromServiceAccount(key: ServiceAccountKey, file: string): CredentialSource {
  if (typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
    throw new Error(`${file}: a service-account key needs client_email and private_key`);
  }
  const tokenUri = key.token_uri ?? GOOGLE_TOKEN_URI;
  return {
    describe: `service account ${key.client_email}`,
    tokenRequest: (now) => ({
      url: tokenUri,
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: serviceAccountAssertion(key, tokenUri, now) }).toString(),
    }),
  };
}

function fromAuthorizedUser(user: AuthorizedUser): CredentialSource {
  return {
    describe: 'gcloud user credentials',
    tokenRequest: () => ({
      url: user.token_uri ?? GOOGLE_TOKEN_URI,
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: user.client_id, client_secret: user.client_secret, refresh_token: user.refresh_token }).toString(),
    }),
  };
}

const METADATA_SERVER: CredentialSource = {
  describe: 'the metadata server',
  tokenRequest: () => ({ url: METADATA_TOKEN_URL, method: 'GET', headers: { 'metadata-flavor': 'Google' }, body: null }),
};

/** Reads a key file; throws with the file's name (never its content) when it is unusable. */
function fromFile(file: string): CredentialSource {
  let parsed: { type?: unknown };
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as { type?: unknown };
  } catch (error) {
    // eslint-disable-next-line preserve-caught-error -- no cause: a JSON parse error quotes the file, which holds a private key
    throw new Error(`${file}: not a readable JSON credentials file (${(error as NodeJS.ErrnoException).code ?? 'invalid JSON'})`);
  }
  if (parsed.type === 'service_account') return fromServiceAccount(parsed as ServiceAccountKey, file);
  if (parsed.type === 'authorized_user') return fromAuthorizedUser(parsed as AuthorizedUser);
  throw new Error(`${file}: credentials of type ${JSON.stringify(parsed.type)} are not supported (service_account or authorized_user)`);
}

/** The credentials of a Vertex provider: its key file, else application default credentials. */
export function credentialSource(credentialsFile: string, env: NodeJS.ProcessEnv = process.env): CredentialSource {
  if (credentialsFile !== '') return fromFile(credentialsFile);
  const fromEnv = env.GOOGLE_APPLICATION_CREDENTIALS;
  if (fromEnv !== undefined && fromEnv !== '') return fromFile(fromEnv);
  const gcloud = path.join(env.CLOUDSDK_CONFIG ?? path.join(homedir(), '.config', 'gcloud'), 'application_default_credentials.json');
  return existsSync(gcloud) ? fromFile(gcloud) : METADATA_SERVER;
}
