/**
 * What the browser suites share: Debian's Chromium driven by playwright-core (never a downloaded
 * browser), a gateway whose console allows sign-up and whose models are priced, accounts and
 * redemption codes made straight in the store, and a watch on each page for console errors, script
 * errors, CSP violations and dialogs.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { hashPassword } from '../../src/auth/passwords';
import { unitsToNano } from '../../src/billing/money';
import { generateRedemptionCode, hashRedemptionCode } from '../../src/billing/redemption';
import type { Account, AccountRole, Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';

/**
 * The few browser globals used by functions that run in the page (page.evaluate, addInitScript).
 * This project compiles without the DOM lib, so they are reached as
 * `(globalThis as unknown as PageGlobals).document`: only the type is imported, nothing that the
 * compiled function would look up in this module.
 */
export interface PageGlobals {
  readonly document: {
    readonly activeElement: PageElement | null;
    readonly body: PageElement;
    readonly documentElement: { readonly scrollWidth: number };
    addEventListener(type: 'securitypolicyviolation', listener: (event: CspViolationEvent) => void): void;
  };
  readonly navigator: { readonly clipboard: { readText(): Promise<string>; writeText(text: string): Promise<void> } };
}

export interface PageElement {
  readonly tagName: string;
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
  /** Inputs only. */
  readonly labels?: ArrayLike<{ readonly textContent: string | null }> | null;
  readonly value?: string;
}

interface CspViolationEvent {
  readonly violatedDirective: string;
  readonly blockedURI: string;
  readonly sourceFile: string;
  readonly lineNumber: number;
}

/** The system's Chromium; TOLLGATE_TEST_CHROMIUM points elsewhere. */
const CHROMIUM_PATH = process.env.TOLLGATE_TEST_CHROMIUM ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where each test leaves its screenshot (git-ignored). */
const RESULTS_DIR = path.resolve(__dirname, '..', '..', '..', 'test-results');

/** Why the browser suites cannot run here, or null when Chromium is installed. */
export function chromiumProblem(): string | null {
  if (existsSync(CHROMIUM_PATH)) return null;
  return `Chromium not found at ${CHROMIUM_PATH} (install Debian's "chromium" package, or set TOLLGATE_TEST_CHROMIUM)`;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** What a console suite runs against: a fake upstream, a gateway with the sign-up console in front of it, and Chromium. */
export interface ConsoleRig {
  readonly browser: Browser;
  readonly fake: FakeUpstream;
  readonly tg: TestGateway;
}

/**
 * Starts a suite's rig from its `before` hook; without Chromium it skips the suite and says why, so
 * a machine without the browser still has a passing, honest run.
 */
export async function startConsoleRig(suite: Mocha.Context, label: string, yaml: ConsoleYamlOptions = {}): Promise<ConsoleRig> {
  const problem = chromiumProblem();
  if (problem !== null) {
    console.log(`      ${problem}: browser ${label} suite skipped`);
    suite.skip();
  }
  const fake = await startFakeUpstream();
  let tg: TestGateway | undefined;
  try {
    tg = await startTestGateway({ yaml: consoleYaml(fake.url, yaml) });
    return { browser: await launchChromium(), fake, tg };
  } catch (error) {
    await tg?.stop();
    await fake.close();
    throw error;
  }
}

/** Ends whatever part of a rig started (a skipped suite started none of it). */
export async function stopConsoleRig(rig: Partial<ConsoleRig>): Promise<void> {
  await rig.browser?.close();
  await rig.fake?.close();
  await rig.tg?.stop();
}

/**
 * A fresh browser profile (cookies, storage) that may read and write the clipboard, in US English
 * (amounts read "$5.00" whatever the machine's locale).
 */
export function newContext(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<BrowserContext> {
  return browser.newContext({ viewport, locale: 'en-US', permissions: ['clipboard-read', 'clipboard-write'] });
}

/** Saves a full-page screenshot as test-results/<name>.png. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name.replace(/[^A-Za-z0-9_.-]+/g, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Model prices per 1M tokens: 1,200 input and 300 output tokens of gpt-priced cost exactly 0.0048. */
const GPT_PRICE = { input: '2', output: '8' } as const;

interface ConsoleYamlOptions {
  readonly signup?: boolean;
  readonly require2fa?: 'none' | 'admins' | 'all';
  /** plugins.billing.currency; the default (none, so usd) unless given. */
  readonly currency?: string;
  /** alerts.low_balance; none unless given. */
  readonly lowBalance?: string;
}

/**
 * A gateway.yaml for the console suites: sign-up on, priced models on the fake upstream, and a
 * `gpt-broken` model whose provider (`broken`) nobody answers for, with a breaker that opens after
 * two failed attempts and stays open, so the providers page has an open breaker to show; and a
 * `gpt-keyless` model whose only provider (`keyless`) has no key, which the console must not offer.
 * No second factor is required unless `require2fa` says so: the suites of other pages sign
 * administrators in.
 */
export function consoleYaml(upstreamUrl: string, options: ConsoleYamlOptions = {}): string {
  const base = upstreamUrl.replace(/\/+$/, '');
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
console: { signup: ${options.signup ?? true}, require_2fa: ${options.require2fa ?? 'none'} }
${options.lowBalance === undefined ? '' : `alerts: { low_balance: "${options.lowBalance}" }`}
providers:
  openai: { protocol: openai, base_url: ${base}/v1, api_key: ${PROVIDER_KEYS.openai} }
  anthropic: { protocol: anthropic, base_url: ${base}, api_key: ${PROVIDER_KEYS.anthropic} }
  broken: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: broken-provider-key }
  keyless: { protocol: openai, base_url: ${base}/v1, api_key: "" }
models:
  # First in the list, where a console that offered it would make it the Playground's default.
  gpt-keyless:
    family: openai
    routes: [{ provider: keyless }]
    price: { input: 1, output: 1 }
    max_output_tokens: 1000
    context_window: 200000
  gpt-priced:
    family: openai
    # What the route costs the operator, so the administrator's pages have upstream cost and margin
    # to show; claude-priced states none (and the catalog has no such model): its cost is unknown.
    routes: [{ provider: openai, cost: { input: 1, cache_write: 1.25, cache_hit: 0.1, output: 4 } }]
    price: { input: ${GPT_PRICE.input}, cache_write: 2.5, cache_hit: 0.2, output: ${GPT_PRICE.output} }
    max_output_tokens: 1000
    context_window: 200000
    description: A priced OpenAI-style model on the fake upstream.
  claude-priced:
    family: anthropic
    routes: [{ provider: anthropic }]
    price: { input: 3, cache_write: 3.75, cache_hit: 0.3, output: 15 }
    max_output_tokens: 1000
    context_window: 200000
  gpt-broken:
    family: openai
    routes: [{ provider: broken }]
    free: true
plugins:
  auth: { failures_per_minute: 0 }
  billing: { flush_interval_ms: 10${options.currency === undefined ? '' : `, currency: ${options.currency}`} }
  upstream:
    failover: { max_attempts: 1 }
    breaker: { volume_threshold: 2, error_threshold_percent: 50, reset_timeout_ms: 600000, rolling_window_ms: 60000 }
`;
}

/** An account that can log in to the console. */
export async function createLoginAccount(store: Store, name: string, password: string, role: AccountRole = 'user'): Promise<Account> {
  return store.createAccount({ name, role, passwordHash: await hashPassword(password) });
}

/** One unused redemption code worth `amount` units (a decimal string), as `tollgate codes create` would make it. */
export async function createRedemptionCode(store: Store, amount: string): Promise<string> {
  const code = generateRedemptionCode();
  await store.createRedemptionCodes({ hashes: [hashRedemptionCode(code)], amount: unitsToNano(amount), createdBy: null, expiresAt: null });
  return code;
}

/** Polls `read` until `done` holds (or the time is up) and returns the last value. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Everything a page did that a visitor should never see behind the scenes. */
export interface PageProblems {
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  readonly cspViolations: string[];
  readonly dialogs: string[];
  /**
   * A request the test makes fail on purpose (a wrong password, a refused form): Chromium logs each
   * failed fetch as a console error, so the line for `status` on `pathname` is not counted.
   */
  allowFailedRequest(pathname: string, status: number): void;
  /** Everything above, one line each. */
  all(): string[];
}

const FAILED_FETCH = /^Failed to load resource: the server responded with a status of (\d{3})\b/;

/** Whether a console line is the browser's own report of a failed fetch that was expected. */
function isExpectedFailure(text: string, url: string, allowed: ReadonlySet<string>): boolean {
  const status = FAILED_FETCH.exec(text)?.[1];
  if (status === undefined || url === '') return false;
  return allowed.has(`${status} ${new URL(url).pathname}`);
}

/**
 * Starts recording a page's console errors, uncaught errors, CSP violations and dialogs (dialogs
 * are dismissed, so a stray alert() cannot hang the test). CSP violations are caught twice: the
 * `securitypolicyviolation` event (from a script added before the page's own) and the console line.
 */
export async function watchPage(page: Page): Promise<PageProblems> {
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];
  const dialogs: string[] = [];
  // Every signed-out page load asks GET /api/session who is logged in; nobody is, so it answers 401.
  const allowed = new Set<string>(['401 /api/session']);
  await page.exposeFunction('__tollgateCspViolation', (line: string) => {
    cspViolations.push(line);
  });
  await page.addInitScript(() => {
    const page = globalThis as unknown as PageGlobals & { __tollgateCspViolation(line: string): Promise<void> };
    page.document.addEventListener('securitypolicyviolation', (event) => {
      void page.__tollgateCspViolation(`${event.violatedDirective} blocked ${event.blockedURI || '(inline)'} at ${event.sourceFile}:${event.lineNumber}`);
    });
  });
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const url = message.location().url;
    if (isExpectedFailure(message.text(), url, allowed)) return;
    consoleErrors.push(`${message.text()} (${url || 'no location'})`);
  });
  page.on('pageerror', (error) => pageErrors.push(error.stack ?? error.message));
  page.on('dialog', (dialog) => {
    // Our own confirm steps are <dialog> elements, not window dialogs: any of these is unexpected.
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => undefined);
  });
  return {
    consoleErrors,
    pageErrors,
    cspViolations,
    dialogs,
    allowFailedRequest: (pathname, status) => void allowed.add(`${status} ${pathname}`),
    all: () => [
      ...consoleErrors.map((line) => `console error: ${line}`),
      ...pageErrors.map((line) => `page error: ${line}`),
      ...cspViolations.map((line) => `CSP violation: ${line}`),
      ...dialogs.map((line) => `dialog: ${line}`),
    ],
  };
}
