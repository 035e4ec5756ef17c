#!/usr/bin/env node
/**
 * The client compatibility suite: real clients, unchanged, against Tollgate in front of the mock
 * upstream, nothing but 127.0.0.1. Each case is one cell of the matrix (client × feature × model
 * family) and either works or is refused with the reason the matrix shows. Results go to
 * last-run.json (read by scripts/clients-matrix.mjs); the last line is "N passed, N failed".
 *
 *   node test/clients/run.mjs [filter]     (after `npm run build` and `npm run clients:install`)
 *   CLIENTS_UPSTREAM_LOG=/tmp/upstream.json node test/clients/run.mjs "Claude Code"   (keeps what the mock received)
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startTollgate } from './gateway.mjs';
import { startMockUpstream } from './mock/server.mjs';

const CASE_FILES = ['sdk-openai', 'sdk-anthropic', 'ai-sdk', 'langchain', 'agents', 'claude-code', 'codex', 'codex-websocket', 'websocket-sdks'];
const filter = process.argv[2] ?? '';
const started = Date.now();

const upstream = await startMockUpstream();
const tollgate = await startTollgate(upstream.url);
const env = { url: tollgate.url, key: tollgate.key, managementToken: tollgate.managementToken, upstream };

const results = [];
for (const file of CASE_FILES) {
  const { cases } = await import(`./cases/${file}.mjs`).catch(() => ({ cases: [] }));
  for (const testCase of cases) {
    const name = `${testCase.client} · ${testCase.feature} · ${testCase.family}`;
    if (filter !== '' && !name.includes(filter)) continue;
    const caseStarted = Date.now();
    const logStart = upstream.log.length;
    const transportStart = tollgate.transport.length;
    let outcome;
    try {
      // A case may return a note (figures it measured): printed and kept in last-run.json.
      const note = await testCase.run({ ...env, model: testCase.model, upstreamSince: () => upstream.log.slice(logStart), transportSince: () => tollgate.transport.slice(transportStart) });
      outcome = typeof note === 'string' ? { passed: true, note } : { passed: true };
    } catch (err) {
      outcome = { passed: false, error: String(err?.stack ?? err).split('\n').slice(0, 6).join('\n') };
    }
    const result = {
      client: testCase.client,
      feature: testCase.feature,
      family: testCase.family,
      model: testCase.model,
      expect: testCase.refused === undefined ? 'works' : `refused: ${testCase.refused}`,
      fix: testCase.fix ?? null,
      ms: Date.now() - caseStarted,
      ...outcome,
    };
    results.push(result);
    console.log(`${result.passed ? 'ok  ' : 'FAIL'} ${name} (${testCase.model}) ${result.ms} ms${result.passed ? '' : `\n     ${result.error.replace(/\n/g, '\n     ')}`}`);
    if (result.note !== undefined) console.log(`     ${result.note}`);
  }
}

await tollgate.stop();
await upstream.close();
// For debugging a case: every request the mock upstream got (what Tollgate sent) and its answer.
if (process.env.CLIENTS_UPSTREAM_LOG) writeFileSync(process.env.CLIENTS_UPSTREAM_LOG, `${JSON.stringify(upstream.log, null, 1)}\n`);

const passed = results.filter((r) => r.passed).length;
const failed = results.length - passed;
const seconds = (Date.now() - started) / 1000;
if (filter === '') {
  const versions = JSON.parse((await import('node:fs')).readFileSync(fileURLToPath(new URL('./package.json', import.meta.url)), 'utf8')).dependencies;
  writeFileSync(
    fileURLToPath(new URL('./last-run.json', import.meta.url)),
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds, passed, failed, versions, results }, null, 2)}\n`,
  );
}
console.log(`client compatibility: ${results.length} cases in ${seconds.toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
