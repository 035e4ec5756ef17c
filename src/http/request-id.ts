/** Tollgate's own request ids: what the ledger, holds and logs key on. */
import { randomUUID } from 'node:crypto';

/**
 * `req_` and 32 hex digits: the time in ms (12 digits), then 80 random bits. Time first keeps the
 * ledger's primary key (charges.request_id) append-mostly: fully random ids put every insert on a
 * different index page, which doubled the cost of writing a charge once the table outgrew the page
 * cache. randomUUID draws from a pre-filled entropy cache, so this costs no syscall per request.
 */
export function newRequestId(): string {
  const uuid = randomUUID();
  // Of `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`, the first 8 and the last 12 digits are all random.
  return `req_${Date.now().toString(16).padStart(12, '0')}${uuid.slice(0, 8)}${uuid.slice(24)}`;
}
