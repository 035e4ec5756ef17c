/**
 * The console's files, served by Tollgate itself so it works offline and behind any proxy: every
 * `/console/...` page path answers the one HTML page (the script routes on the path), and
 * `/console/assets/<file>` the built scripts and styles. The policy below allows our own scripts,
 * styles and API calls and nothing else: no inline script, no framing, no third party.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Middleware } from 'koa';
import { PACKAGE_ROOT } from '../paths';

export const CONSOLE_PREFIX = '/console';
const CONSOLE_DIR = path.join(PACKAGE_ROOT, 'dist', 'console');

const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json; charset=utf-8',
};
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/**
 * Files are read once and kept: they only change with a new build, which means a restart. Only files
 * that exist stay: a name that is not there is forgotten once answered, since anyone can ask for any
 * number of names and keeping each would grow memory without bound (docs/limits.md).
 */
const cache = new Map<string, Promise<Buffer | null>>();

function load(file: string): Promise<Buffer | null> {
  let entry = cache.get(file);
  if (entry === undefined) {
    entry = readFile(file).catch(() => null);
    cache.set(file, entry);
    void entry.then((body) => body === null && cache.delete(file));
  }
  return entry;
}

/** How many files are held, for tests of the bound. */
export function consoleCacheSize(): number {
  return cache.size;
}

interface ConsoleOptions {
  enabled(): boolean;
}

export function consolePages(options: ConsoleOptions): Middleware {
  return async function serveConsole(ctx, next: () => Promise<void>): Promise<void> {
    if (ctx.path !== CONSOLE_PREFIX && !ctx.path.startsWith(`${CONSOLE_PREFIX}/`)) return next();
    if (!options.enabled() || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.set({
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
    });
    if (ctx.secure) ctx.set('strict-transport-security', 'max-age=31536000; includeSubDomains');

    const asset = ctx.path.startsWith(`${CONSOLE_PREFIX}/assets/`) ? ctx.path.slice(`${CONSOLE_PREFIX}/assets/`.length) : null;
    if (asset !== null) {
      const type = TYPES[path.extname(asset)];
      const body = type !== undefined && ASSET_NAME.test(asset) && !asset.includes('..') ? await load(path.join(CONSOLE_DIR, 'assets', asset)) : null;
      if (body === null) return next();
      ctx.set('cache-control', 'no-cache');
      ctx.type = type;
      ctx.body = body;
      return;
    }
    const page = await load(path.join(CONSOLE_DIR, 'index.html'));
    if (page === null) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The console is not built: run "npm run build".';
      return;
    }
    ctx.set('cache-control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  };
}
