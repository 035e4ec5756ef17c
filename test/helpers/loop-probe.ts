/**
 * Preloaded into a gateway child (`node --require …/loop-probe.js`): measures its event loop's longest
 * block in CPU time beside the wall-clock one (block-meter.ts). On SIGUSR2 the child writes what it saw
 * since the previous SIGUSR2 to `TOLLGATE_LOOP_PROBE_FILE` (`loopProbe` in serve-child.ts reads it)
 * and starts over. Linux only.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { startBlockMeter } from './block-meter';

const file = process.env.TOLLGATE_LOOP_PROBE_FILE;

if (file !== undefined) {
  let seq = 0;
  const meter = startBlockMeter();
  process.on('SIGUSR2', () => {
    seq += 1;
    // Written whole, then renamed: a reader never sees half of it.
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq, ...meter.read() }));
    renameSync(`${file}.tmp`, file);
    meter.reset();
  });
}
