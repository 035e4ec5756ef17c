/**
 * The ledger writer wired to a balance book: each batch written or charge set aside reaches the
 * book's figures (through its live copy's in-step write when it keeps one), charges replayed from
 * the outbox are counted by the book, and the book can sum what is still queued. One wiring, so the
 * gateway and the simulator run the same one.
 */
import type { Logger } from 'pino';
import type { ChargeRecord, Store } from '../store/store';
import type { BalanceBook } from './book';
import { LedgerWriter, type LedgerWriterOptions } from './ledger-writer';

type BookFed = 'onWritten' | 'writeThrough' | 'instance' | 'onAdopt';

export interface BookWriterOptions extends Omit<LedgerWriterOptions, BookFed> {
  /** A replayed batch the book could not count (the drift check shows what that left). */
  readonly onAdoptFailed?: (error: unknown) => void;
}

export function openBookWriter(store: Store, book: BalanceBook, options: BookWriterOptions, logger: Logger): LedgerWriter {
  const live = book.liveCopy;
  const { onSetAside, onAdoptFailed, ...rest } = options;
  const writer = new LedgerWriter(
    store,
    {
      ...rest,
      onWritten: live === null ? (charges) => book.written(charges) : undefined,
      writeThrough: live?.writeLedger.bind(live),
      // No longer queued: a book that counts queued charges stops counting it (the ledger has not got it).
      onSetAside: (charge, error) => (onSetAside?.(charge, error), book.written([charge])),
      instance: live?.instance ?? null,
      onAdopt: (charges) => {
        book.adopt(charges).catch((error: unknown) => onAdoptFailed?.(error));
      },
    },
    logger,
  );
  book.countUnwritten((counts) => writer.unwritten().reduce((sum, charge: ChargeRecord) => (counts(charge) ? sum + charge.cost : sum), 0n));
  return writer;
}
