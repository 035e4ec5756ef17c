/**
 * Signs Bedrock requests with AWS Signature Version 4, using the official signer and either the
 * static keys from gateway.yaml or the default credential chain (environment, shared config and SSO,
 * web identity, container and instance roles), which caches and refreshes what it finds.
 */
import type * as CredentialProviders from '@aws-sdk/credential-providers';
import type * as HashNode from '@smithy/hash-node';
import type * as SigV4 from '@smithy/signature-v4';
import type { ProviderConfig } from '../../config/types';
import { GatewayError } from '../../kernel/errors';
import type { OutgoingRequest, RequestAuthenticator } from '../../wire/types';

/** The signing name of the Bedrock runtime endpoints. */
const SERVICE = 'bedrock';

export function bedrockSigner(provider: ProviderConfig): RequestAuthenticator {
  // The AWS SDK is loaded by the first Bedrock provider, never by a gateway without one.
  const { fromNodeProviderChain } = require('@aws-sdk/credential-providers') as typeof CredentialProviders;
  const { Hash } = require('@smithy/hash-node') as typeof HashNode;
  const { SignatureV4 } = require('@smithy/signature-v4') as typeof SigV4;
  const sha256 = Hash.bind(null, 'sha256');
  const credentials =
    provider.access_key_id !== ''
      ? {
          accessKeyId: provider.access_key_id,
          secretAccessKey: provider.secret_access_key,
          ...(provider.session_token !== '' && { sessionToken: provider.session_token }),
        }
      : fromNodeProviderChain();
  const signer = new SignatureV4({ service: SERVICE, region: provider.region, credentials, sha256 });
  return {
    async authenticate(request: OutgoingRequest) {
      const url = new URL(request.path, request.origin);
      let signed;
      try {
        signed = await signer.sign({
          method: 'POST',
          protocol: url.protocol,
          hostname: url.hostname,
          port: url.port === '' ? undefined : Number(url.port),
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: { ...request.headers, host: url.host },
          body: request.body,
        });
      } catch (error) {
        // No credentials found, or the chain failed: the operator's problem, never the client's.
        throw new GatewayError('TOLLGATE_ERR_UPSTREAM_AUTH', `The upstream provider '${provider.id}' has no usable AWS credentials; the operator has been told.`, {
          cause: error,
        });
      }
      Object.assign(request.headers, signed.headers);
    },
  };
}
