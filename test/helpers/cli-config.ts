/** A throwaway folder with a minimal gateway.yaml (the echo model) over a SQLite file, for CLI tests. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface CliFolder {
  readonly dir: string;
  readonly configFile: string;
  readonly dbFile: string;
}

/** Makes the folder; `dbFile` is relative to it (`tollgate.db` unless given). The caller removes `dir`. */
export function makeCliFolder(prefix: string, dbFile = 'tollgate.db'): CliFolder {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const configFile = path.join(dir, 'gateway.yaml');
  const db = path.join(dir, dbFile);
  writeFileSync(
    configFile,
    [
      'providers: {echo: {protocol: echo}}',
      'models: {tollgate-echo: {family: openai, routes: [{provider: echo}], free: true}}',
      `store: {url: ${JSON.stringify(`sqlite:${db}`)}}`,
      '',
    ].join('\n'),
  );
  return { dir, configFile, dbFile: db };
}
