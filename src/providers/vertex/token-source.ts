/**
 * Vertex access tokens, cached and refreshed before they expire: one token serves every request
 * until five minutes before its end (or half its life, when it is short), and concurrent requests
 * share one refresh. A failed refresh is not cached, so the next request tries again.
 */
import { request } from 'undici';
import type { ProviderConfig } from '../../config/types';
import { GatewayError } from '../../kernel/errors';
import type { OutgoingRequest, RequestAuthenticator } from '../../wire/types';
import { credentialSource, type CredentialSource } from './credentials';

const REFRESH_MARGIN_MS = 5 * 60 * 1000;
const TOKEN_TIMEOUT_MS = 10_000;

interface CachedToken {
  readonly value: string;
  /** When to fetch a new one, in ms since the epoch. */
  readonly refreshAt: number;
}

export class GoogleTokenSource {
  private cached: CachedToken | null = null;
  private refreshing: Promise<CachedToken> | null = null;

  constructor(
    private readonly source: CredentialSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** A valid access token: the cached one, or a fresh one. */
  async token(): Promise<string> {
    const cached = this.cached;
    if (cached !== null && this.now() < cached.refreshAt) return cached.value;
    this.refreshing ??= this.fetch().finally(() => (this.refreshing = null));
    return (await this.refreshing).value;
  }

  /** Drops the cached token (the provider refused it: revoked, or expired early). */
  forget(): void {
    this.cached = null;
  }

  private async fetch(): Promise<CachedToken> {
    const asked = this.source.tokenRequest(Math.floor(this.now() / 1000));
    const response = await request(asked.url, {
      method: asked.method,
      headers: asked.headers,
      body: asked.body,
      headersTimeout: TOKEN_TIMEOUT_MS,
      bodyTimeout: TOKEN_TIMEOUT_MS,
    });
    const text = await response.body.text();
    // The token endpoint's words are kept out of the error: they may quote the assertion.
    if (response.statusCode !== 200) throw new Error(`the token endpoint of ${this.source.describe} answered ${response.statusCode}`);
    const reply = JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    if (typeof reply.access_token !== 'string' || reply.access_token === '') throw new Error(`the token endpoint of ${this.source.describe} sent no access_token`);
    const lifetimeMs = (typeof reply.expires_in === 'number' ? reply.expires_in : 3600) * 1000;
    const token = { value: reply.access_token, refreshAt: this.now() + Math.max(0, Math.min(lifetimeMs - REFRESH_MARGIN_MS, lifetimeMs / 2)) };
    this.cached = token;
    return token;
  }
}

/** Adds `Authorization: Bearer <token>` to Vertex requests; the key file is read once, at boot. */
export function vertexAuthenticator(provider: ProviderConfig): RequestAuthenticator {
  let tokens: GoogleTokenSource | null = null;
  let unusable: unknown = null;
  try {
    tokens = new GoogleTokenSource(credentialSource(provider.credentials_file));
  } catch (error) {
    unusable = error;
  }
  return {
    async authenticate(outgoing: OutgoingRequest) {
      try {
        if (tokens === null) throw unusable;
        outgoing.headers.authorization = `Bearer ${await tokens.token()}`;
      } catch (error) {
        throw new GatewayError('TOLLGATE_ERR_UPSTREAM_AUTH', `The upstream provider '${provider.id}' could not get a Google access token; the operator has been told.`, {
          cause: error,
        });
      }
    },
    refused: () => tokens?.forget(),
  };
}
