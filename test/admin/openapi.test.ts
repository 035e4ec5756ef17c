/**
 * schemas/management-api.yaml against the code it documents: the routes the router serves, the
 * shapes views.ts produces and the error codes api-error.ts knows. A route, field or code added on
 * one side only fails here, so the document cannot drift.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { parse } from 'yaml';
import { API_ERROR_STATUS, ApiError } from '../../src/admin/api-error';
import { managementRoutes } from '../../src/admin/index';
import {
  activityView,
  AUDIT_FIELDS,
  auditView,
  accountSummaryView,
  accountView,
  CODE_FIELDS,
  codeView,
  creditView,
  keyView,
  tokenView,
  USAGE_FIELDS,
  usageView,
} from '../../src/admin/views';
import { PACKAGE_VERSION, SCHEMAS_DIR } from '../../src/paths';
import { AUDIT_ACTIONS } from '../../src/store/audit';
import type { Account, ApiKeyRecord, ChargeRecord, CreditRecord, RedemptionCodeRecord, SessionRecord, UsageSummaryRow } from '../../src/store/store';
import { operatorSummaryView, requestView, SUMMARY_FIELDS, summaryView } from '../../src/admin/usage-views';
import { PLAIN_CHARGE } from '../helpers/charges';
import { composeDocument } from '../../src/statements/document';
import { parseMonth } from '../../src/statements/month';
import { STATEMENT_CSV_FIELDS } from '../../src/statements/render-csv';
import { statementSummaryView, statementView } from '../../src/statements/views';
import { documentHash, type StoredStatement } from '../../src/store/statements';

/** A statement as the store keeps it, composed as issuing does. */
function storedStatement(): StoredStatement {
  const month = parseMonth('2026-11')!;
  const issuedAt = new Date('2026-12-01T01:00:00Z');
  const context = { account: { id: 'acc_1b9c', name: 'alice' }, month, issuer: { name: 'Example Ltd', address: ['1 Long Road'], tax_id: 'GB1', footer: '' }, numberPrefix: 'TG', currency: 'usd', issuedAt };
  const ledger = {
    before: 1_000_000_000n,
    credits: [{ kind: 'topup', amount: 20_000_000_000n, entries: 1 }],
    debits: [{ kind: 'refund', amount: 5_000_000_000n, entries: 1 }],
    chargesByModel: [{ id: 'claude-sonnet-5', name: 'claude-sonnet-5', requests: 12, amount: 106_200_000n }],
    chargesByPayer: [{ id: 'key_7d41', name: null, requests: 12, amount: 106_200_000n }],
  };
  const { number, document } = composeDocument(context, ledger, null, 123);
  return { id: 'st_5a1f', number, accountId: 'acc_1b9c', month: month.month, issuedAt, document, hash: documentHash(document) };
}

const DOCUMENT_FILE = path.join(SCHEMAS_DIR, 'management-api.yaml');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const ERROR_REF = '#/components/schemas/Error';
const SCHEMA_ID = 'urn:tollgate:management-api';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Operation {
  /** `GET /api/keys/{id}` */
  readonly id: string;
  readonly path: string;
  readonly method: string;
  readonly pathItem: JsonObject;
  readonly operation: JsonObject;
}

const isObject = (value: Json | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

function loadDocument(): JsonObject {
  const document = parse(readFileSync(DOCUMENT_FILE, 'utf8')) as Json;
  if (!isObject(document)) throw new Error(`${DOCUMENT_FILE} is not a YAML mapping`);
  return document;
}

/** The value a local `$ref` (`#/components/...`) points at, or undefined. */
function resolvePointer(document: JsonObject, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: Json | undefined = document;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = isObject(node) ? node[key] : Array.isArray(node) && /^\d+$/.test(key) ? node[Number(key)] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Follows `$ref`s until an object without one. */
function deref(document: JsonObject, node: Json | undefined): JsonObject {
  for (let hops = 0; isObject(node) && typeof node.$ref === 'string'; hops += 1) {
    if (hops > 20) throw new Error(`$ref loop at ${node.$ref}`);
    node = resolvePointer(document, node.$ref);
  }
  if (!isObject(node)) throw new Error('a $ref leads to something that is not an object');
  return node;
}

/** Every `$ref` string in the document with where it was found. */
function collectRefs(node: Json, at: string, found: Array<{ at: string; ref: string }>): Array<{ at: string; ref: string }> {
  if (Array.isArray(node)) node.forEach((item, index) => collectRefs(item, `${at}/${index}`, found));
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push({ at, ref: value });
      else collectRefs(value, `${at}/${key}`, found);
    }
  }
  return found;
}

function operationsOf(document: JsonObject): Operation[] {
  const paths = document.paths;
  if (!isObject(paths)) throw new Error('the document has no paths');
  return Object.entries(paths).flatMap(([pathName, pathItem]) => {
    if (!isObject(pathItem)) throw new Error(`paths["${pathName}"] is not an object`);
    return HTTP_METHODS.filter((method) => pathItem[method] !== undefined).map((method) => {
      const operation = pathItem[method];
      if (!isObject(operation)) throw new Error(`${method} ${pathName} is not an object`);
      return { id: `${method.toUpperCase()} ${pathName}`, path: pathName, method, pathItem, operation };
    });
  });
}

/** Property names of an object schema, through `$ref` and `allOf`. */
function propertyNames(document: JsonObject, schema: Json | undefined): string[] {
  const resolved = deref(document, schema);
  const own = isObject(resolved.properties) ? Object.keys(resolved.properties) : [];
  const inherited = Array.isArray(resolved.allOf) ? resolved.allOf.flatMap((part) => propertyNames(document, part)) : [];
  return [...inherited, ...own];
}

/** The JSON Schemas of the document (components and inline ones), under one `$id`, for ajv. */
function schemaValidator(document: JsonObject) {
  const components = document.components as JsonObject;
  const inline: Json[] = [];
  const gather = (node: Json): void => {
    if (Array.isArray(node)) node.forEach(gather);
    else if (isObject(node)) {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'schema' && isObject(value)) inline.push(value);
        else gather(value);
      }
    }
  };
  gather(document.paths);
  gather(components.parameters);
  gather(components.responses);
  gather(components.headers);
  // `#/components/schemas/X` becomes `#/$defs/X`: the same schemas as one JSON Schema document.
  const defs = JSON.parse(
    JSON.stringify({ ...(components.schemas as JsonObject), ...Object.fromEntries(inline.map((schema, index) => [`inline_${index}`, schema])) }).replaceAll(
      '"#/components/schemas/',
      '"#/$defs/',
    ),
  ) as JsonObject;
  // Strict: an unknown keyword or a misplaced one (a typo in the document) is an error. Formats only document here.
  const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: SCHEMA_ID, $defs: defs });
  return {
    names: Object.keys(defs),
    /** ajv's complaint about `value` against a schema of the document, or null when it is valid. */
    errors(name: string, value: unknown): string | null {
      const validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/${name}`);
      if (validate === undefined) throw new Error(`no schema ${name}`);
      return validate(value) ? null : ajv.errorsText(validate.errors, { dataVar: name });
    },
  };
}

function csvExample(document: JsonObject, operationId: string): string[] {
  const operation = operationsOf(document).find((candidate) => candidate.operation.operationId === operationId);
  const responses = operation?.operation.responses as JsonObject | undefined;
  const success = Object.entries(responses ?? {}).find(([status]) => /^2\d\d$/.test(status));
  const content = success === undefined ? undefined : deref(document, success[1]).content;
  const example = isObject(content) && isObject(content['text/csv']) ? content['text/csv'].example : undefined;
  if (typeof example !== 'string') throw new Error(`${operationId} has no text/csv example`);
  return example.split(/\r?\n/)[0].split(',');
}

describe('schemas/management-api.yaml', () => {
  let document: JsonObject;
  let operations: Operation[];

  before(() => {
    document = loadDocument();
    operations = operationsOf(document);
  });

  it('is an OpenAPI 3.1 document titled and versioned like the package', () => {
    expect(document.openapi).to.be.a('string').and.match(/^3\.1\.\d+$/);
    const info = document.info as JsonObject;
    expect(info.title).to.equal('Tollgate management API');
    expect(info.version).to.equal(PACKAGE_VERSION);
    expect(info.description).to.be.a('string').and.not.equal('');
  });

  describe('against the router', () => {
    const served = () => managementRoutes().map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`);

    it('reads the routes from the router without a running gateway', () => {
      const routes = managementRoutes();
      expect(routes.length).to.be.greaterThan(20);
      for (const route of routes) {
        expect(route.path, `${route.method} ${route.path}`).to.match(/^\/api\//);
        expect(route.method).to.not.equal('HEAD');
      }
      expect(served()).to.include.members(['GET /api/meta', 'POST /api/session', 'PATCH /api/keys/{id}', 'DELETE /api/tokens/{id}']);
    });

    it('documents every route the router serves, with that method', () => {
      const documented = new Set(operations.map((operation) => operation.id));
      expect(served().filter((route) => !documented.has(route)), 'served but not documented').to.deep.equal([]);
    });

    it('documents no operation the router does not serve', () => {
      const routes = new Set(served());
      expect(operations.map((operation) => operation.id).filter((id) => !routes.has(id)), 'documented but not served').to.deep.equal([]);
    });

    it('documents each route once', () => {
      expect(new Set(served()).size).to.equal(served().length);
    });
  });

  describe('operations', () => {
    it('have unique operationIds and a summary', () => {
      const ids = operations.map((operation) => operation.operation.operationId);
      for (const operation of operations) {
        expect(operation.operation.operationId, operation.id).to.be.a('string');
        expect(operation.operation.summary, operation.id).to.be.a('string').and.not.equal('');
      }
      expect(new Set(ids).size).to.equal(ids.length);
    });

    it('declare exactly the path parameters of their path', () => {
      for (const operation of operations) {
        const inPath = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
        const declared = [...((operation.pathItem.parameters as Json[] | undefined) ?? []), ...((operation.operation.parameters as Json[] | undefined) ?? [])]
          .map((parameter) => deref(document, parameter))
          .filter((parameter) => parameter.in === 'path');
        expect(declared.map((parameter) => parameter.name).sort(), operation.id).to.deep.equal(inPath);
        for (const parameter of declared) expect(parameter.required, `${operation.id} ${JSON.stringify(parameter.name)}`).to.equal(true);
      }
    });

    it('each have a 2xx answer', () => {
      for (const operation of operations) {
        expect(Object.keys(operation.operation.responses as JsonObject).filter((status) => /^2\d\d$/.test(status)), operation.id).to.not.be.empty;
      }
    });

    it('each have a 4xx answer, and every 4xx and 5xx answer is the shared Error schema', () => {
      for (const operation of operations) {
        const responses = Object.entries(operation.operation.responses as JsonObject);
        expect(responses.filter(([status]) => /^4\d\d$/.test(status)), `${operation.id} has no 4xx`).to.not.be.empty;
        for (const [status, response] of responses.filter(([code]) => /^[45]\d\d$/.test(code))) {
          const content = deref(document, response).content;
          const json = isObject(content) ? content['application/json'] : undefined;
          expect(isObject(json) ? json.schema : undefined, `${operation.id} ${status}`).to.deep.equal({ $ref: ERROR_REF });
        }
      }
    });

    it('take JSON request bodies only, and answer JSON or CSV (a statement also as HTML and PDF)', () => {
      // A statement is a document people print and file: its three routes answer a page and a PDF too.
      const documents = new Set(['GET /api/statements/{id}', 'GET /api/orgs/{id}/statements/{statementId}', 'GET /api/admin/statements/{id}']);
      for (const operation of operations) {
        const body = operation.operation.requestBody;
        if (body !== undefined) expect(Object.keys(deref(document, body).content as JsonObject), operation.id).to.deep.equal(['application/json']);
        for (const [status, response] of Object.entries(operation.operation.responses as JsonObject)) {
          const content = deref(document, response).content;
          if (status === '204') expect(content, `${operation.id} 204`).to.equal(undefined);
          else {
            const allowed = ['application/json', 'text/csv', ...(documents.has(operation.id) && status === '200' ? ['text/html', 'application/pdf'] : [])];
            expect(Object.keys(content as JsonObject).filter((type) => !allowed.includes(type)), `${operation.id} ${status}`).to.deep.equal([]);
          }
        }
      }
    });

    it('need no credential only for meta, prices, login, sign-up and the Stripe webhook (signed by Stripe)', () => {
      const open = operations.filter((operation) => Array.isArray(operation.operation.security) && operation.operation.security.length === 0);
      expect(open.map((operation) => operation.id).sort()).to.deep.equal(['GET /api/meta', 'GET /api/prices', 'POST /api/payments/stripe/webhook', 'POST /api/session', 'POST /api/signup']);
    });

    it('require the CSRF token with the cookie on every state change', () => {
      for (const operation of operations.filter((candidate) => candidate.method !== 'get')) {
        const security = operation.operation.security as JsonObject[];
        if (security.length === 0) continue;
        expect(security, operation.id).to.deep.equal([{ session: [], csrf: [] }, { managementToken: [] }]);
      }
      expect(document.security).to.deep.equal([{ session: [] }, { managementToken: [] }]);
    });
  });

  describe('references and schemas', () => {
    it('resolves every $ref', () => {
      const refs = collectRefs(document, '#', []);
      expect(refs.length).to.be.greaterThan(50);
      const broken = refs.filter(({ ref }) => resolvePointer(document, ref) === undefined).map(({ at, ref }) => `${at}: ${ref}`);
      expect(broken).to.deep.equal([]);
    });

    it('names the shapes of the API in components.schemas', () => {
      expect(Object.keys(document.components as JsonObject)).to.include('securitySchemes');
      expect(Object.keys((document.components as JsonObject).schemas as JsonObject)).to.include.members([
        'Account',
        'AccountSummary',
        'Key',
        'NewKey',
        'Credit',
        'Usage',
        'Code',
        'NewCode',
        'Token',
        'Price',
        'Provider',
        'DailyUsage',
        'Error',
      ]);
    });

    it('has schemas that compile as strict JSON Schema 2020-12', () => {
      const schemas = schemaValidator(document);
      for (const name of schemas.names) expect(() => schemas.errors(name, {}), name).to.not.throw();
    });

    it('lists exactly the error codes api-error.ts knows', () => {
      const error = deref(document, { $ref: ERROR_REF });
      const fields = ((error.properties as JsonObject).error as JsonObject).properties as JsonObject;
      expect([...((fields.code as JsonObject).enum as string[])].sort()).to.deep.equal(Object.keys(API_ERROR_STATUS).sort());
    });
  });

  describe('against the views', () => {
    let schemas: ReturnType<typeof schemaValidator>;
    before(() => {
      schemas = schemaValidator(document);
    });
    const at = new Date('2026-11-09T10:15:02.120Z');
    const later = new Date('2099-01-01T00:00:00.000Z');
    const account: Account = { id: 'acc_1b9c', name: 'alice', email: null, role: 'user', disabled: false, createdAt: at, budget: null, sessionBudget: null };
    const bareKey: ApiKeyRecord = {
      id: 'key_7d41',
      accountId: account.id,
      name: null,
      spendLimit: null,
      spent: 0n,
      models: null,
      rateLimits: null,
      budget: null, sessionBudget: null, allowedNetworks: null, operatorLimits: null,
      prefix: 'sk-AbCd',
      last4: 'wxyz',
      createdAt: at,
      revokedAt: null,
      expiresAt: null,
    };
    const fullKey: ApiKeyRecord = {
      ...bareKey,
      name: 'laptop',
      spendLimit: 5_000_000_000n,
      spent: 120_000_000n,
      models: ['claude-sonnet-5'],
      rateLimits: { rpm: 60, tpm: 100_000, concurrency: 4 },
      budget: { amount: 2_000_000_000n, period: 'day', timezone: 'Europe/Berlin' },
      allowedNetworks: ['10.0.0.0/8'],
      operatorLimits: { spendLimit: 5_000_000_000n, models: ['claude-sonnet-5'], allowedNetworks: ['2001:db8::/32'], budget: { amount: 3_000_000_000n, period: 'day', timezone: 'Europe/Berlin' } },
      revokedAt: at,
      expiresAt: later,
    };
    const credit: CreditRecord = { id: 'cr_4c1e', accountId: account.id, amount: 10_000_000_000n, kind: 'admin', actor: 'root', note: 'invoice 42', createdAt: at };
    const charge: ChargeRecord = {
      requestId: 'req_3f2a',
      accountId: account.id,
      keyId: bareKey.id,
      model: 'claude-sonnet-5',
      provider: null,
      endpoint: '/v1/messages',
      inputTokens: 1200,
      cacheWriteTokens: 0, cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 350,
      imageInputTokens: 0,
      imageOutputTokens: 0,
      cost: 8_850_000n,
      ...PLAIN_CHARGE,
      usageSource: 'upstream',
      status: 200,
      outcome: 'delivered',
      latencyMs: 1840,
      createdAt: at,
    };
    const summaryRow: UsageSummaryRow = {
      group: 'claude-sonnet-5',
      requests: 12,
      errors: 1,
      cost: 106_200_000n,
      upstream: null,
      inputTokens: 14_400,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 2_000,
      outputTokens: 4_200,
      imageInputTokens: 0,
      imageOutputTokens: 0,
      firstAt: at,
      lastAt: later,
      models: null,
    };
    const code: RedemptionCodeRecord = { id: 'rc_5e0a', amount: 5_000_000_000n, createdAt: at, createdBy: 'root', expiresAt: later, redeemedBy: null, redeemedAt: null };
    const token: SessionRecord = { id: 'ses_9a0f3c2e1b7d4a65', accountId: account.id, kind: 'token', name: null, createdAt: at, expiresAt: later, lastUsedAt: at, userAgent: 'curl/8.5.0' };

    const cases: Array<[schema: string, view: () => Record<string, unknown>]> = [
      ['Account', () => accountView(account)],
      ['Account', () => accountView({ ...account, email: 'alice@example.com', role: 'admin', disabled: true })],
      ['AccountSummary', () => accountSummaryView({ ...account, balance: 12_500_000_000n, held: 42_000n })],
      ['AccountSummary', () => accountSummaryView({ ...account, balance: -1_000_000n, held: 0n })],
      ['Key', () => keyView(bareKey)],
      ['Key', () => keyView(fullKey)],
      ['ListedKey', () => ({ ...keyView(bareKey), ...activityView(undefined) })],
      ['ListedKey', () => ({ ...keyView(fullKey), ...activityView({ keyId: fullKey.id, lastUsedAt: at, spentToday: 1_500n, spentMonth: 120_000_000n }) })],
      ['UsageGroup', () => summaryView(summaryRow, null)],
      ['UsageGroup', () => summaryView({ ...summaryRow, group: 'sess-1', models: ['a', 'b'], inputTokens: 0, cacheReadTokens: 0 }, 'laptop')],
      ['OperatorUsageGroup', () => operatorSummaryView({ ...summaryRow, upstream: { cost: 60_000_000n, costedCharged: 96_200_000n, uncosted: 1 } }, null)],
      ['OperatorUsageGroup', () => operatorSummaryView({ ...summaryRow, upstream: { cost: 0n, costedCharged: 0n, uncosted: 12 } }, 'alice')],
      ['UsageRequest', () => requestView(charge, 'laptop')],
      [
        'UsageRequest',
        () =>
          requestView(
            {
              ...charge,
              provider: 'anthropic',
              toolCalls: { web_search: 2 },
              prices: { tokens: { inputTokens: '3000', cacheWriteTokens: '3750', cacheWrite1hTokens: '6000', cacheReadTokens: '300', outputTokens: '15000', imageInputTokens: '0', imageOutputTokens: '0' }, tool_calls: { web_search: '10000000' } },
              sessionId: 'cc-1',
              requestedModel: 'sonnet',
              servedModel: 'claude-sonnet-5-20261101',
              attempts: [{ provider: 'a', outcome: 'status_529', ms: 120 }, { provider: 'anthropic', outcome: 'ok', ms: 800 }],
              ttfbMs: 912,
              userAgent: 'claude-cli/2.1.90',
              origin: 'playground',
            },
            null,
          ),
      ],
      [
        'UsageRequest',
        () =>
          requestView(
            {
              ...charge,
              endpoint: 'images',
              images: 2,
              imageOutputTokens: 0,
              prices: {
                tokens: { inputTokens: '0', cacheWriteTokens: '0', cacheWrite1hTokens: '0', cacheReadTokens: '0', outputTokens: '0', imageInputTokens: '0', imageOutputTokens: '0' },
                tool_calls: {},
                per_image: { key: '1024x1792/hd', nano: '120000000' },
              },
            },
            null,
          ),
      ],
      ['Credit', () => creditView(credit)],
      ['Credit', () => creditView({ ...credit, kind: 'topup', actor: null, note: null })],
      ['Usage', () => usageView(charge, new Map([[bareKey.id, 'laptop']]))],
      ['Usage', () => usageView({ ...charge, provider: 'anthropic', outcome: 'aborted', status: 499, usageSource: 'partial' }, new Map())],
      ['Code', () => codeView(code)],
      ['Code', () => codeView({ ...code, createdBy: null, expiresAt: null, redeemedBy: 'alice', redeemedAt: at })],
      ['Token', () => tokenView(token)],
      ['Token', () => tokenView({ ...token, name: 'deploy script' })],
      ['AuditEntry', () => auditView({ id: 'aud_1', at, actor: 'root', surface: 'console', action: 'account.disable', target: account.id, accountId: account.id, before: { disabled: false }, after: { disabled: true }, requestId: 'req_1' })],
      ['AuditEntry', () => auditView({ id: 'aud_2', at, actor: 'SIGHUP', surface: 'server', action: 'config.reload', target: 'gateway.yaml', accountId: null, before: null, after: null, requestId: null })],
      ['Statement', () => statementView(storedStatement())],
      ['StatementSummary', () => statementSummaryView(storedStatement())],
      ['Error', () => new ApiError('not_found', 'This key was not found.').toJSON()],
      ['Error', () => new ApiError('invalid_request', 'A name is required.', 'name').toJSON()],
    ];

    for (const [index, [schema, view]] of cases.entries()) {
      it(`${schema} describes what views.ts produces (${index + 1})`, () => {
        const value = view();
        expect(schemas.errors(schema, value)).to.equal(null);
        expect(Object.keys(value).sort(), 'fields of the view vs properties of the schema').to.deep.equal(propertyNames(document, { $ref: `#/components/schemas/${schema}` }).sort());
      });
    }

    it('lists exactly the audit actions the store knows', () => {
      const action = deref(document, { $ref: '#/components/schemas/AuditAction' });
      expect(action.enum).to.deep.equal([...AUDIT_ACTIONS]);
    });

    it('orders the CSV columns of the examples as the exports do', () => {
      expect(csvExample(document, 'listUsage')).to.deep.equal([...USAGE_FIELDS]);
      expect(csvExample(document, 'usageSummary')).to.deep.equal([...SUMMARY_FIELDS]);
      expect(csvExample(document, 'adminListCodes')).to.deep.equal([...CODE_FIELDS]);
      expect(csvExample(document, 'adminListAudit')).to.deep.equal([...AUDIT_FIELDS]);
      expect(csvExample(document, 'getStatement')).to.deep.equal([...STATEMENT_CSV_FIELDS]);
      expect(csvExample(document, 'adminCreateCodes')).to.deep.equal(propertyNames(document, { $ref: '#/components/schemas/NewCode' }));
    });
  });
});
