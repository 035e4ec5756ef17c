/** A stand-in for an operator's alert webhook: records each delivery and answers as the test says. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Delivery {
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** 'hang' keeps the request open until the receiver closes. */
type Answer = number | 'hang';

export interface AlertReceiver {
  readonly url: string;
  readonly deliveries: Delivery[];
  /** Answers for the next deliveries, in order; 200 once they run out. */
  answer(...answers: Answer[]): void;
  /** Deliveries held open ('hang') and not yet given up by the sender. */
  hanging(): number;
  /** Resolves once `count` deliveries have arrived. */
  received(count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startAlertReceiver(): Promise<AlertReceiver> {
  const deliveries: Delivery[] = [];
  const answers: Answer[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      for (const wait of waiting.filter((candidate) => deliveries.length >= candidate.count)) {
        waiting.splice(waiting.indexOf(wait), 1);
        wait.resolve();
      }
      const answer = answers.shift() ?? 200;
      if (answer === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    deliveries,
    answer: (...given) => answers.push(...given),
    hanging: () => hanging.size,
    received: (count) => (deliveries.length >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve }))),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
