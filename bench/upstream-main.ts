/** Runs the bench upstream in its own process and prints `{"url": …}` on one line when listening. */
import { startBenchUpstream } from './fake-upstream';

startBenchUpstream()
  .then((upstream) => process.stdout.write(`${JSON.stringify({ url: upstream.url })}\n`))
  .catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
