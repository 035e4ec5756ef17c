// What every page module provides, and what it is given to render.

export interface PageContext {
  /** A fresh container for this visit; the router swaps it into <main>. */
  root: HTMLElement;
  path: string;
  query: URLSearchParams;
  /** Aborted when the person navigates away, so late responses are dropped. */
  signal: AbortSignal;
}

export interface Page {
  /** Shown in the tab title: "<title> · Tollgate". */
  title: string;
  /** Reachable without signing in. */
  public?: boolean;
  /** Only for accounts with the admin role. */
  admin?: boolean;
  render(context: PageContext): void;
}
