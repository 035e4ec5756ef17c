/**
 * Money coming in from outside: card payments (payments.ts: orders, debits, Stripe events, payment
 * profiles) and redemption codes.
 */
import type { CreditRecord } from './ledger-store';
import type { CardPaymentStore } from './payments';

export interface RedemptionCodeRecord {
  readonly id: string;
  readonly amount: bigint;
  readonly createdAt: Date;
  readonly createdBy: string | null;
  readonly expiresAt: Date | null;
  readonly redeemedBy: string | null;
  readonly redeemedAt: Date | null;
}

export type RedeemResult =
  | { readonly ok: true; readonly credit: CreditRecord }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

export interface PaymentsStore {
  /** Stores new redemption codes by the SHA-256 of their text (the text itself is shown once). */
  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]>;
  /** Redeems a code once, whoever races for it: one credit, later attempts `used`. */
  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult>;
  listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]>;

  /** Card payments: orders, debits, Stripe events, payment profiles (payments.ts). */
  readonly payments: CardPaymentStore;
}
