/** Relayed response and conversation ids in the SQLite store (see relayed-responses.ts). */
import type { SqliteDatabase } from './sqlite-driver';
import { RELAYED_CONFLICT, RELAYED_INSERT, RELAYED_SELECT, type RelayedId, type RelayedResponseStore } from './relayed-responses';

export class SqliteRelayedResponses implements RelayedResponseStore {
  constructor(private readonly db: SqliteDatabase) {}

  async record(accountId: string, ids: readonly RelayedId[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    const insert = this.db.prepare<unknown[]>(`${RELAYED_INSERT} (?, ?, ?, ?) ${RELAYED_CONFLICT}`);
    this.db.transaction(() => {
      for (const ref of ids) insert.run(ref.kind, ref.id, accountId, at.getTime());
    }).immediate();
  }

  async relayedTo(accountId: string, ref: RelayedId): Promise<boolean> {
    return this.db.prepare<unknown[], { found: number }>(RELAYED_SELECT).get(ref.kind, ref.id, accountId) !== undefined;
  }
}
