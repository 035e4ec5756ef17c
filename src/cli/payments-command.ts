/**
 * `tollgate payments reconcile`: every pending card payment looked up in Stripe at once, whatever its
 * age, crediting (once, through the live book) what Stripe says was paid. For the hours after an
 * outage in which webhooks were lost; the gateway's background job does the same for old orders.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { Registry } from 'prom-client';
import { PaymentMetrics } from '../metrics/payment-metrics';
import { Payments } from '../payments/payments';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_ERROR, EXIT_OK, withBook } from './context';

const USAGE = 'usage: tollgate payments reconcile [--config FILE]';

export async function paymentsCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() => parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' } } }));
  if (positionals[0] !== 'reconcile') throw new UsageError(USAGE);
  expectPositionals(positionals.slice(1), 0, 'payments reconcile');
  return withBook(values.config, io, async (store, book, config) => {
    const stripe = config.payments.stripe;
    if (stripe === undefined) throw new Error(`${config.source} sets no payments.stripe: there are no card payments to reconcile`);
    const logger = pino({ level: 'silent' });
    const payments = new Payments({ store, funds: book, logger, metrics: new PaymentMetrics(new Registry()), config: () => stripe });
    const summary = await payments.reconcile({ expire: false });
    io.out(`checked ${summary.checked} pending payments: ${summary.credited} credited, ${summary.failed} failed, ${summary.expired} expired, ${summary.pending} still pending`);
    for (const error of summary.errors) io.out(`ERROR  ${error}`);
    return summary.errors.length === 0 ? EXIT_OK : EXIT_ERROR;
  });
}

