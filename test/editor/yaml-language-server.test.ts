/**
 * gateway.yaml in an editor: yaml-language-server (the engine of the YAML extensions of VS Code, Neovim
 * and others), driven in process with the workspace resolver the server itself uses, reads the schema
 * named by the shipped file's `# yaml-language-server: $schema=` line, resolves the plugin schemas next
 * to it without the network, completes fields and flags mistakes.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { getLanguageService, type LanguageService } from 'yaml-language-server';
import { workspaceContext } from 'yaml-language-server/out/server/src/languageservice/services/schemaRequestHandler';
import { PACKAGE_ROOT } from '../../src/paths';

const SHIPPED = path.join(PACKAGE_ROOT, 'gateway.yaml');

describe('gateway.yaml in yaml-language-server', () => {
  let service: LanguageService;
  const requested: string[] = [];
  let modeline: string;

  before(async () => {
    modeline = (await readFile(SHIPPED, 'utf8')).split('\n')[0];
    service = getLanguageService({
      // Offline, like an editor with no network: only files can be read.
      schemaRequestService: async (uri) => {
        requested.push(uri);
        if (!uri.startsWith('file:')) throw new Error(`not a local file: ${uri}`);
        return readFile(fileURLToPath(uri), 'utf8');
      },
      workspaceContext,
    });
    service.configure({ validate: true, completion: true, hover: true });
  });

  let version = 0;
  /** A document at the shipped file's place, so its relative modeline resolves as in the checkout; each
   * a new version of it, as an editor sends edits (the server caches what it parsed per version). */
  function document(text: string): TextDocument {
    version += 1;
    return TextDocument.create(pathToFileURL(SHIPPED).toString(), 'yaml', version, text);
  }

  it('ships gateway.yaml with a modeline naming the schema relative to the file', () => {
    expect(modeline).to.equal('# yaml-language-server: $schema=./schemas/gateway.schema.json');
  });

  it('completes the top-level fields from the schema', async () => {
    const doc = document(`${modeline}\nversion: 1\n\n`);
    const list = await service.doComplete(doc, { line: 2, character: 0 }, false);
    const labels = list.items.map((item) => item.label);
    expect(labels).to.include.members(['server', 'store', 'redis', 'providers', 'models', 'plugins', 'console']);
  });

  it('completes a plugin\'s fields through the relative $ref to its own schema file', async () => {
    const doc = document(`${modeline}\nproviders: {}\nmodels: {}\nplugins:\n  auth:\n    \n`);
    const list = await service.doComplete(doc, { line: 5, character: 4 }, false);
    expect(list.items.map((item) => item.label)).to.include('cache_ttl_ms');
  });

  it('flags an unknown field and a wrong type, inside a plugin too, reading only local files', async () => {
    const doc = document(`${modeline}\nproviders: {}\nmodels: {}\nserver:\n  prot: 8080\nplugins:\n  auth:\n    cache_ttl_ms: soon\n`);
    const problems = await service.doValidation(doc, false);
    const messages = problems.map((problem) => `${problem.range.start.line}: ${problem.message}`);
    expect(messages.some((message) => message.startsWith('4: ') && /prot/.test(message)), messages.join('\n')).to.equal(true);
    expect(messages.some((message) => message.startsWith('7: ') && /Incorrect type/i.test(message)), messages.join('\n')).to.equal(true);
    expect(requested.filter((uri) => !uri.startsWith('file:'))).to.deep.equal([]);
  });

  it('finds no problem in the shipped gateway.yaml', async () => {
    const problems = await service.doValidation(document(await readFile(SHIPPED, 'utf8')), false);
    expect(problems.map((problem) => `${problem.range.start.line + 1}: ${problem.message}`)).to.deep.equal([]);
  });
});
