/**
 * The CLI's side of the audit log: each change a command makes is appended as done by `cli:$USER`
 * on the `cli` surface (no request id), and `tollgate audit list` prints the log. An append that
 * fails makes the command fail (exit 1) after the change, so the operator hears of it.
 */
import type { AuditChange } from '../audit/states';
import { AUDIT_ACTIONS, type AuditAction, type AuditRecord } from '../store/audit';
import type { AuditStore } from '../store/audit-store';
import { toCsv } from '../admin/csv';
import { AUDIT_FIELDS, auditCsvRow } from '../admin/views';
import { UsageError } from './args';
import { cliActor, type CliIo } from './context';
import { formatTable, formatTime } from './table';

export async function auditFromCli(store: AuditStore, io: CliIo, change: AuditChange): Promise<void> {
  await store.appendAudit({ ...change, actor: cliActor(io), surface: 'cli', requestId: null });
}

export interface AuditListInput {
  readonly actor?: string;
  readonly target?: string;
  readonly action?: string;
  readonly since?: string;
  readonly until?: string;
  readonly limit?: string;
  readonly csv: boolean;
}

function dateOption(value: string | undefined, name: string, bound: 'start' | 'end'): Date | undefined {
  if (value === undefined) return undefined;
  const isDay = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const date = new Date(isDay ? `${value}T00:00:00.000Z` : value);
  if (Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be a date such as 2026-11-09 or an ISO time, got "${value}"`);
  // As an upper bound a bare day means its end, so --since D --until D is that whole day.
  return isDay && bound === 'end' ? new Date(date.getTime() + 86_400_000) : date;
}

function actionOption(value: string | undefined): AuditAction | undefined {
  if (value === undefined) return undefined;
  if (!(AUDIT_ACTIONS as readonly string[]).includes(value)) throw new UsageError(`--action is one of ${AUDIT_ACTIONS.join(', ')}`);
  return value as AuditAction;
}

function limitOption(value: string | undefined): number {
  if (value === undefined) return 100;
  const limit = Number(value);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${value}"`);
  return limit;
}

function change(entry: AuditRecord): string {
  const part = (state: AuditRecord['before']) => (state === null ? '-' : JSON.stringify(state));
  return entry.before === null && entry.after === null ? '' : `${part(entry.before)} -> ${part(entry.after)}`;
}

/** `audit list`: newest first, as a table or (with --csv) the console's CSV. */
export async function listAuditCommand(store: AuditStore, input: AuditListInput, out: (line: string) => void): Promise<AuditRecord[]> {
  const entries = await store.listAudit({
    actor: input.actor,
    target: input.target,
    action: actionOption(input.action),
    since: dateOption(input.since, 'since', 'start'),
    until: dateOption(input.until, 'until', 'end'),
    limit: limitOption(input.limit),
  });
  if (input.csv) {
    out(toCsv(AUDIT_FIELDS, entries.map(auditCsvRow)).trimEnd());
    return entries;
  }
  if (entries.length === 0) {
    out('no audit entries match');
    return entries;
  }
  const rows = entries.map((entry) => [formatTime(entry.at), entry.actor, entry.surface, entry.action, entry.target ?? '-', change(entry)]);
  for (const line of formatTable([['TIME', 'ACTOR', 'VIA', 'ACTION', 'TARGET', 'CHANGE'], ...rows])) out(line);
  return entries;
}
