/**
 * What the primary and its workers say to each other over the cluster's IPC channel. Every message
 * carries `tollgate`, its kind, so messages of other libraries on the same channel (prom-client's
 * metrics requests) pass by untouched.
 */
import type { Admission, Decision, LimitRequest } from '../rate-limit/limiter';

/** Worker to primary. */
export type WorkerMessage =
  | { readonly tollgate: 'listening'; readonly port: number; readonly url: string }
  | { readonly tollgate: 'limit-acquire'; readonly id: number; readonly request: LimitRequest }
  | { readonly tollgate: 'limit-release'; readonly admission: Admission; readonly actualTokens: number | null }
  | { readonly tollgate: 'metrics'; readonly id: number };

/** Primary to worker. */
export type PrimaryMessage =
  | { readonly tollgate: 'reload' }
  | { readonly tollgate: 'stop'; readonly signal: string }
  | { readonly tollgate: 'limit-decision'; readonly id: number; readonly decision: Decision }
  | { readonly tollgate: 'metrics'; readonly id: number; readonly body: string; readonly contentType: string; readonly error?: string };

export function isTollgateMessage<T extends { tollgate: string }>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && typeof (message as { tollgate?: unknown }).tollgate === 'string';
}
