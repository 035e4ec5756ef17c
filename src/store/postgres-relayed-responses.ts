/** Relayed response and conversation ids in the PostgreSQL store (see relayed-responses.ts). */
import type { Pool } from 'pg';
import { RELAYED_CONFLICT, RELAYED_INSERT, RELAYED_SELECT, type RelayedId, type RelayedResponseStore } from './relayed-responses';

/** `?` placeholders as PostgreSQL's `$n`. */
function numbered(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

const SELECT = numbered(RELAYED_SELECT);

export class PostgresRelayedResponses implements RelayedResponseStore {
  constructor(private readonly pool: Pool) {}

  async record(accountId: string, ids: readonly RelayedId[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    // One statement: atomic without a transaction, and one round trip whatever the count.
    const rows = ids.map((_, index) => `($${index * 4 + 1}, $${index * 4 + 2}, $${index * 4 + 3}, $${index * 4 + 4})`);
    await this.pool.query(`${RELAYED_INSERT} ${rows.join(', ')} ${RELAYED_CONFLICT}`, ids.flatMap((ref) => [ref.kind, ref.id, accountId, at]));
  }

  async relayedTo(accountId: string, ref: RelayedId): Promise<boolean> {
    const { rowCount } = await this.pool.query(SELECT, [ref.kind, ref.id, accountId]);
    return (rowCount ?? 0) > 0;
  }
}
