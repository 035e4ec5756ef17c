/**
 * The usage analytics pages in a real browser (Chromium through playwright-core): Analytics, Sessions,
 * a session, a request, the Tokens page's recent spend, the Playground, and the administrator's
 * gateway totals, on a desktop and on a phone-sized screen. The figures each page shows are checked
 * against the ledger: the sums by day, model, token and session equal what the account was charged,
 * and another account's request or session is not found.
 */
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import type { Account, ChargeRecord } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import type { TestGateway } from '../helpers/test-gateway';
import { anthropicMessage, chatCompletion } from '../helpers/upstream-replies';
import { createLoginAccount, newContext, saveScreenshot, startConsoleRig, stopConsoleRig, waitFor, watchPage, type PageProblems } from './browser-helpers';

const PASSWORD = 'correct-horse-battery';
const PHONE = { width: 390, height: 844 };

/** A displayed amount's exact figure (its title: "0.0048", "-1.5") as nano-units. */
const shown = (text: string | null): bigint => unitsToNano((text ?? '').trim().replace('−', '-'));
const total = (charges: readonly ChargeRecord[]): bigint => charges.reduce((sum, charge) => sum + charge.cost, 0n);
/** An administrator's usage summary row, as the API returns it. */
type ApiGroup = { group: string | null; label?: string | null; upstream_cost: string; margin: string };

describe('browser: usage analytics, sessions, requests, playground', function () {
  this.timeout(90_000);

  let browser: Browser;
  let fake: FakeUpstream;
  let tg: TestGateway;
  let context: BrowserContext | null = null;
  let page: Page;
  let problems: PageProblems;
  let una: Account;
  let otto: Account;
  let unaCharges: ChargeRecord[];
  let ottoRequest: string;

  async function send(key: string, path: string, headers: Record<string, string>, model: string): Promise<string> {
    const anthropic = path === '/v1/messages';
    const res = await fetch(`${tg.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(anthropic ? { 'x-api-key': key, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${key}` }), ...headers },
      body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
    return res.headers.get('x-request-id')!;
  }

  before(async function () {
    ({ browser, fake, tg } = await startConsoleRig(this, 'analytics'));
    una = await createLoginAccount(tg.store, 'una', PASSWORD);
    otto = await createLoginAccount(tg.store, 'otto', PASSWORD);
    await createLoginAccount(tg.store, 'root', PASSWORD, 'admin');
    for (const account of [una, otto]) await tg.store.credit({ accountId: account.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
    const laptop = await tg.createKey({ accountId: una.id, name: 'laptop' });
    const server = await tg.createKey({ accountId: una.id, name: 'server' });
    const ottos = await tg.createKey({ accountId: otto.id, name: 'ottos' });
    fake.enqueue(chatCompletion({ inputTokens: 1200, outputTokens: 300, model: 'gpt-priced' }));
    await send(laptop.key, '/v1/chat/completions', { 'x-claude-code-session-id': 'cc-browser-1', 'user-agent': 'claude-cli/2.1.90' }, 'gpt-priced');
    fake.enqueue(chatCompletion({ inputTokens: 800, outputTokens: 100, model: 'gpt-priced' }));
    await send(laptop.key, '/v1/chat/completions', { 'x-claude-code-session-id': 'cc-browser-1' }, 'gpt-priced');
    fake.enqueue(anthropicMessage({ inputTokens: 500, outputTokens: 200, model: 'claude-priced' }));
    await send(server.key, '/v1/messages', { session_id: 'codex-browser-1' }, 'claude-priced');
    fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 10, model: 'gpt-priced' }));
    await send(server.key, '/v1/chat/completions', {}, 'gpt-priced');
    fake.enqueue(chatCompletion({ inputTokens: 50, outputTokens: 5, model: 'gpt-priced' }));
    ottoRequest = await send(ottos.key, '/v1/chat/completions', { 'x-claude-code-session-id': 'otto-only' }, 'gpt-priced');
    unaCharges = await waitFor(() => tg.store.listCharges({ accountId: una.id }), (list) => list.length === 4);
    await waitFor(() => tg.store.listCharges({ accountId: otto.id }), (list) => list.length === 1);
    expect(unaCharges).to.have.length(4);
  });

  after(async () => {
    await stopConsoleRig({ browser, fake, tg });
  });

  afterEach(async function () {
    if (context === null) return;
    await saveScreenshot(page, this.currentTest?.fullTitle() ?? 'browser-analytics').catch(() => undefined);
    await context.close();
    context = null;
  });

  async function openPage(viewport?: { width: number; height: number }): Promise<Page> {
    context = await newContext(browser, viewport);
    page = await context.newPage();
    problems = await watchPage(page);
    return page;
  }

  async function heading(text: string): Promise<void> {
    await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
  }

  async function logIn(name: string): Promise<void> {
    await page.goto(`${tg.url}/console`);
    await page.getByLabel('Name or e-mail').fill(name);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await heading('Dashboard');
  }

  async function goTo(link: string, title = link): Promise<void> {
    const nav = page.getByRole('navigation', { name: 'Main' });
    const toggle = nav.getByRole('button', { name: /menu/i });
    if (await toggle.count() > 0 && await toggle.isVisible()) await toggle.click();
    await nav.getByRole('link', { name: link, exact: true }).click();
    await heading(title);
  }

  /** Text of each cell of the table's rows, by column heading. */
  /** The exact figure of an amount shown to the cent: its title, or that of the amount inside it. */
  async function exactFigure(testId: string): Promise<string | null> {
    const element = page.getByTestId(testId);
    return (await element.getAttribute('title')) ?? element.locator('[title]').first().getAttribute('title');
  }

  async function tableRows(testId: string): Promise<Array<Record<string, string>>> {
    const table = page.getByTestId(testId);
    await table.waitFor();
    const headers = (await table.locator('thead th').allTextContents()).map((text) => text.trim());
    // An amount cell shows money to the cent; its exact figure is the title (what the API and CSV carry).
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) =>
      td.querySelector('.money[title]')?.getAttribute('title') ?? (td.textContent ?? '').trim())));
    return rows.map((cells) => Object.fromEntries(headers.map((header, index) => [header, cells[index]])));
  }

  async function expectSumsOnAnalytics(): Promise<void> {
    const charged = total(unaCharges);
    await page.getByTestId('analytics-total-cost').waitFor();
    expect(shown(await exactFigure('analytics-total-cost')), 'the total shown').to.equal(charged);
    for (const table of ['by-model', 'by-key', 'by-session']) {
      const rows = await tableRows(table);
      const sum = rows.reduce((acc, row) => acc + shown(row.Cost), 0n);
      if (table === 'by-session') {
        // Every charge: those outside any session are one row of their own, so the rows add up.
        expect(sum, table).to.equal(charged);
        // The Playground's visits (each its own session) are one group, labelled Playground.
        const inSession = unaCharges.filter((charge) => charge.sessionId !== null && charge.sessionId !== undefined);
        const sessions = [...new Set(inSession.filter((charge) => charge.origin !== 'playground').map((charge) => charge.sessionId as string))].sort();
        const playground = inSession.some((charge) => charge.origin === 'playground');
        const unnamed = unaCharges.some((charge) => charge.sessionId === null || charge.sessionId === undefined);
        expect(rows.length, 'a row per session, one for the Playground, and one for the rest').to.equal(sessions.length + (playground ? 1 : 0) + (unnamed ? 1 : 0));
        expect(rows.map((row) => row.Session).filter((session) => sessions.includes(session)).sort()).to.deep.equal(sessions);
        expect(rows.filter((row) => row.Session.startsWith('Playground')).length, 'one Playground row').to.equal(playground ? 1 : 0);
      } else {
        expect(sum, table).to.equal(charged);
      }
    }
    const byModel = await tableRows('by-model');
    expect(byModel.map((row) => row.Model).sort()).to.deep.equal([...new Set(unaCharges.map((charge) => charge.model))].sort());
    const byKey = await tableRows('by-key');
    expect(byKey.map((row) => row.Token).sort()).to.deep.equal(unaCharges.some((charge) => charge.origin === 'playground') ? ['Playground', 'laptop', 'server'] : ['laptop', 'server']);
    // The chart's table lists every day of the range; its days sum to the total too.
    const days = await page.locator('.chart-table table tbody tr td:nth-child(3) .money').evaluateAll((cells) => cells.map((cell) => cell.getAttribute('title') ?? ''));
    expect(days.reduce((acc, text) => acc + shown(text), 0n), 'by day').to.equal(charged);
  }

  it('shows an account holder its spend by day, model, token and session, equal to the ledger', async () => {
    await openPage();
    await logIn('una');
    await goTo('Analytics');
    await expectSumsOnAnalytics();
    // The CSV links carry the same range.
    const href = await page.getByRole('link', { name: 'Download CSV (by model)' }).getAttribute('href');
    expect(href).to.match(/^\/api\/usage\/summary\?since=\d{4}-\d{2}-\d{2}&group_by=model&format=csv$/);
    // Today only: still every charge (all were made just now).
    await page.getByLabel('Range', { exact: true }).selectOption('1');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await expectSumsOnAnalytics();
    expect(new URL(page.url()).searchParams.get('range')).to.equal('1');
    expect(problems.all()).to.deep.equal([]);
  });

  it('opens a session from Sessions, then a request in full, with figures from the ledger', async () => {
    await openPage();
    await logIn('una');
    await goTo('Sessions');
    const sessions = await tableRows('sessions-table');
    expect(sessions.map((row) => row.Session).sort()).to.deep.equal(['cc-browser-1', 'codex-browser-1']);
    await page.getByRole('link', { name: 'cc-browser-1' }).click();
    await heading('Session');
    const inSession = unaCharges.filter((charge) => charge.sessionId === 'cc-browser-1');
    await page.getByTestId('session-cost').waitFor();
    expect(shown(await exactFigure('session-cost'))).to.equal(total(inSession));
    expect(await page.getByTestId('session-requests').textContent()).to.equal('2');
    expect((await tableRows('session-requests-table')).reduce((acc, row) => acc + shown(row.Cost), 0n)).to.equal(total(inSession));

    await page.getByTestId('session-requests-table').locator('tbody tr a').first().click();
    await heading('Request');
    const id = new URL(page.url()).searchParams.get('id')!;
    const charge = unaCharges.find((entry) => entry.requestId === id)!;
    await page.getByTestId('request-cost').waitFor();
    expect(shown(await exactFigure('request-cost'))).to.equal(charge.cost);
    expect(shown(await exactFigure('request-held'))).to.equal(charge.held);
    const lines = await tableRows('request-lines');
    expect(lines.find((row) => row.Kind === 'input')?.Tokens).to.equal(charge.inputTokens.toLocaleString('en-US'));
    const attempts = await tableRows('request-attempts');
    expect(attempts.map((row) => [row.Provider, row.Outcome])).to.deep.equal([['openai', 'answered']]);
    await page.getByText('claude-cli/2.1.90').or(page.getByText('cc-browser-1')).first().waitFor();
    expect(problems.all()).to.deep.equal([]);
  });

  it("answers 'not found' for another account's request and session", async () => {
    await openPage();
    await logIn('una');
    problems.allowFailedRequest(`/api/usage/requests/${ottoRequest}`, 404);
    problems.allowFailedRequest('/api/usage/sessions/otto-only', 404);
    await page.goto(`${tg.url}/console/request?id=${ottoRequest}`);
    await heading('Request');
    await page.getByRole('alert').getByText('This request was not found.').waitFor();
    await page.goto(`${tg.url}/console/session?id=otto-only`);
    await heading('Session');
    await page.getByRole('alert').getByText('This session was not found.').waitFor();
    expect(problems.all()).to.deep.equal([]);
  });

  it("shows each token's last use and its spend today and this month", async () => {
    await openPage();
    await logIn('una');
    await goTo('Tokens');
    const keys = await tableRows('key-table');
    const laptop = keys.find((row) => row.Name === 'laptop')!;
    const laptopCharges = unaCharges.filter((charge) => charge.sessionId === 'cc-browser-1');
    expect(shown(laptop.Today)).to.equal(total(laptopCharges));
    expect(shown(laptop['This month'])).to.equal(total(laptopCharges));
    expect(laptop['Last used']).to.not.equal('Never');
    expect(problems.all()).to.deep.equal([]);
  });

  it('chats in the Playground with two models side by side, each turn billed and its cost shown', async () => {
    await openPage();
    await logIn('una');
    await goTo('Playground');
    await page.getByLabel('Model', { exact: true }).selectOption('gpt-priced');
    await page.getByLabel('Compare with (1)').selectOption('claude-priced');
    await page.getByLabel('System prompt (optional)').fill('Answer briefly.');
    await page.getByLabel('Temperature').fill('0.2');
    await page.getByLabel('Max tokens').fill('64');
    await page.getByLabel('Message').fill('Say hello.');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const costs = page.getByTestId('playground-cost-value');
    await waitFor(() => costs.count(), (n) => n === 2, 20_000);
    expect(await costs.count()).to.equal(2);
    const played = await waitFor(() => tg.store.listCharges({ accountId: una.id }), (list) => list.filter((charge) => charge.origin === 'playground').length === 2);
    const playground = played.filter((charge) => charge.origin === 'playground');
    expect(playground.map((charge) => charge.model).sort()).to.deep.equal(['claude-priced', 'gpt-priced']);
    expect(new Set(playground.map((charge) => charge.sessionId)).size, 'one playground session').to.equal(1);
    expect(playground[0].sessionId).to.match(/^playground-[0-9a-f]{16}$/);
    const shownCosts = (await costs.evaluateAll((links) => links.map((link) => link.getAttribute('title')))).map((text) => shown(text)).sort();
    expect(shownCosts).to.deep.equal(playground.map((charge) => charge.cost).sort());
    for (const charge of playground) expect(charge.cost > 0n, 'billed like any request').to.equal(true);
    const replies = await page.getByTestId('playground-reply').allTextContents();
    expect(replies.every((text) => text.length > 0), 'each model streamed a reply').to.equal(true);
    expect(problems.all()).to.deep.equal([]);
    unaCharges = played;
  });

  it("shows an administrator the gateway's totals: revenue by day, top accounts and models, provider errors", async () => {
    await openPage();
    await logIn('root');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('button', { name: 'Admin' }).click();
    await nav.getByRole('link', { name: 'Gateway totals', exact: true }).click();
    await heading('Gateway totals');
    const everything = await tg.store.listCharges({ limit: 1000 });
    await page.getByTestId('gateway-revenue').waitFor();
    expect(shown(await exactFigure('gateway-revenue'))).to.equal(total(everything));
    // Cost and margin beside it, over the charges of known upstream cost only.
    const costed = everything.filter((charge) => charge.upstreamCost !== undefined && charge.upstreamCost !== null);
    const upstream = costed.reduce((acc, charge) => acc + charge.upstreamCost!, 0n);
    expect(shown(await exactFigure('gateway-cost'))).to.equal(upstream);
    expect(shown(await exactFigure('gateway-margin'))).to.equal(total(costed) - upstream);
    expect(upstream > 0n, 'a route with a cost served some of them').to.equal(true);
    expect(costed.length, 'and one without served others').to.be.lessThan(everything.length);
    const accounts = await tableRows('by-account');
    expect(accounts.reduce((acc, row) => acc + shown(row.Cost), 0n)).to.equal(total(everything));
    expect(accounts.map((row) => row.Account).sort()).to.deep.equal(['otto', 'una']);
    const models = await tableRows('by-model');
    expect(models.reduce((acc, row) => acc + shown(row.Cost), 0n)).to.equal(total(everything));
    // Top accounts and Top models: each row's upstream cost and margin are the API's figures for it.
    for (const [groupBy, rows, name] of [['account', accounts, 'Account'], ['model', models, 'Model']] as const) {
      const api = await page.evaluate(async (query) => (await fetch(`/api/usage/summary?${query}`)).json() as Promise<{ rows: ApiGroup[] }>,
        `account_id=all&group_by=${groupBy}&limit=10`);
      expect(rows.map((row) => row[name]).sort(), `${groupBy}: the API's rows`).to.deep.equal(api.rows.map((row) => row.label ?? row.group).sort());
      for (const row of rows) {
        const figures = api.rows.find((candidate) => (candidate.label ?? candidate.group) === row[name])!;
        expect(shown(row['Upstream cost']), `${groupBy} ${row[name]}: upstream cost`).to.equal(unitsToNano(figures.upstream_cost));
        expect(shown(row.Margin), `${groupBy} ${row[name]}: margin`).to.equal(unitsToNano(figures.margin));
      }
      expect(rows.reduce((acc, row) => acc + shown(row['Upstream cost']), 0n), `${groupBy}: cost in all`).to.equal(upstream);
      expect(rows.reduce((acc, row) => acc + shown(row.Margin), 0n), `${groupBy}: margin in all`).to.equal(total(costed) - upstream);
    }
    const providers = await tableRows('by-provider');
    expect(providers.reduce((acc, row) => acc + Number(row.Requests), 0)).to.equal(everything.length);
    // Money received is not usage charged: each is its own line, the credits by hand beside them.
    const moneyLines = Object.fromEntries((await tableRows('gateway-money')).map((row) => [row.What, shown(row.Amount)]));
    expect(moneyLines['Usage charged']).to.equal(total(everything));
    expect(moneyLines['Card payments']).to.equal(0n);
    const balances = (await tg.store.ledgerTotals()).reduce((acc, row) => acc + (row.balance > 0n ? row.balance : 0n), 0n);
    expect(moneyLines['Outstanding balances (now)']).to.equal(balances);
    // An administrator's Analytics reads any account, or all of them.
    await page.goto(`${tg.url}/console/analytics?range=30&account_id=all`);
    await heading('Analytics');
    await page.getByTestId('analytics-total-cost').waitFor();
    expect(shown(await exactFigure('analytics-total-cost'))).to.equal(total(everything));
    expect(formatUnits(total(everything))).to.match(/^\d/);
    expect(problems.all()).to.deep.equal([]);
  });

  it('lets an administrator take back a credit, with a note, as a ledger entry', async () => {
    await openPage();
    await logIn('root');
    await page.goto(`${tg.url}/console/admin/accounts`);
    await heading('Accounts');
    // Found by a part of its name, the list paged with its count.
    await page.getByLabel('Name or e-mail contains').fill('OTT');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByTestId('accounts-range').filter({ hasText: '1–1 of 1' }).waitFor();
    expect((await tableRows('accounts-table')).map((row) => row.Name)).to.deep.equal(['otto']);
    const before = (await tg.store.balance(otto.id)).balance;
    await page.getByRole('button', { name: 'Adjust the balance of otto' }).click();
    const dialog = page.getByRole('region', { name: 'Adjust the balance of otto' });
    await dialog.getByLabel('Adjustment').selectOption('debit');
    await dialog.getByLabel('Amount').fill('1.25');
    await dialog.getByLabel('Note').fill('credited twice');
    await dialog.getByRole('button', { name: 'Save adjustment' }).click();
    await page.getByText('Took ').waitFor();
    const [taken] = await tg.store.payments.listDebits(otto.id);
    expect(taken).to.deep.include({ kind: 'adjustment', amount: unitsToNano('1.25'), actor: 'root', note: 'credited twice' });
    expect((await tg.store.balance(otto.id)).balance).to.equal(before - unitsToNano('1.25'));
    expect(problems.all()).to.deep.equal([]);
  });

  it('fits a phone: Analytics, Sessions and a request, with the same figures', async () => {
    await openPage(PHONE);
    await logIn('una');
    await page.goto(`${tg.url}/console/analytics`);
    await heading('Analytics');
    await expectSumsOnAnalytics();
    const overflow = await page.evaluate(() => {
      const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow, 'no sideways scrolling of the page itself').to.be.at.most(1);
    await page.goto(`${tg.url}/console/sessions`);
    await heading('Sessions');
    expect((await tableRows('sessions-table')).length).to.be.at.least(2);
    const id = unaCharges[0].requestId;
    await page.goto(`${tg.url}/console/request?id=${id}`);
    await heading('Request');
    await page.getByTestId('request-cost').waitFor();
    expect(shown(await exactFigure('request-cost'))).to.equal(unaCharges[0].cost);
    await page.goto(`${tg.url}/console/playground`);
    await heading('Playground');
    await page.getByLabel('Message').waitFor();
    expect(problems.all()).to.deep.equal([]);
  });
});
