/**
 * The two places a suite's ledger and live balances can be: the embedded store on one instance, or a
 * fresh PostgreSQL database with a Redis book, as a deployment of several instances runs. A billing
 * suite declared through `onEachBackend` runs on both, and skips the second, saying so, without the
 * services.
 */
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix } from './services';

export interface Backend {
  readonly name: string;
  /** The store and redis sections of gateway.yaml. */
  readonly sections: string;
}

const EMBEDDED: Backend = { name: 'the embedded store', sections: 'store: { url: "sqlite::memory:" }' };

/**
 * Declares `body` in a suite per backend, titled by `title`; `body` reads its backend through the
 * function it is given, once the suite's `before` hook has made the database. `label` names the run
 * in the skip message and in the Redis key prefix.
 */
export function onEachBackend(title: (backendName: string) => string, label: string, body: (backendOf: () => Backend) => void): void {
  for (const shared of [false, true]) {
    describe(title(shared ? 'PostgreSQL + Redis' : EMBEDDED.name), function () {
      this.timeout(30_000);
      let backend = EMBEDDED;
      let cleanup: (() => Promise<void>) | null = null;

      before(async function () {
        if (!shared) return;
        const problem = (await postgresProblem()) ?? (await redisProblem());
        if (problem !== null) {
          console.log(`      ${problem}: the PostgreSQL + Redis run of ${label} skipped`);
          this.skip();
        }
        const database = await createTestDatabase();
        const redis = redisTestPrefix(label.replace(/\W+/g, '-'));
        backend = { name: 'PostgreSQL + Redis', sections: `store: { url: "${database.url}" }\nredis: { url: "${REDIS_URL}", key_prefix: "${redis.prefix}" }` };
        cleanup = async () => {
          await redis.clear();
          await database.drop();
        };
      });

      after(async () => cleanup?.());

      body(() => backend);
    });
  }
}
