/**
 * `keysRevision()` for PostgreSQL: a counter bumped by NOTIFYs that the key/account trigger sends on
 * every change, from any instance, the CLI or hand-written SQL, received on one dedicated LISTEN
 * connection.
 *
 * The bound: while listening, another instance's change moves the counter as soon as its NOTIFY
 * arrives (delivered at commit, typically within milliseconds). A listener that is not connected
 * cannot promise that, so until it is listening again `current()` changes on every call, which makes
 * every cache keyed on it miss, and auth reads the store directly. A silently dead connection (a
 * blackholed network sends no error) is caught by a heartbeat query, so the cache can serve a stale
 * key for at most `heartbeatMs + query timeout` after the link dies.
 */
import { Client, type ClientConfig } from 'pg';
import { KEYS_CHANGED_CHANNEL } from './migrations/postgres';

const RECONNECT_FIRST_DELAY_MS = 250;
const RECONNECT_MAX_DELAY_MS = 10_000;
const HEARTBEAT_INTERVAL_MS = 5_000;

export class KeyChangeListener {
  private revision = 0;
  private client: Client | null = null;
  private listening = false;
  private closed = false;
  private started: Promise<void> | null = null;
  private reconnectDelay = RECONNECT_FIRST_DELAY_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;

  /** `connection` must carry its own timeouts: the heartbeat relies on `query_timeout`. */
  constructor(
    private readonly connection: ClientConfig,
    private readonly onError: (error: Error) => void = () => undefined,
  ) {}

  /** Connects (once); resolves after the first attempt, whether or not it succeeded. */
  start(): Promise<void> {
    this.started ??= this.connect();
    return this.started;
  }

  /** The revision; see the bound above. Starts the listener on first use. */
  current(): number {
    if (this.started === null) void this.start();
    if (!this.listening) this.revision += 1;
    return this.revision;
  }

  /** Counts a change this process made itself, without waiting for its NOTIFY to come back. */
  bump(): void {
    this.revision += 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client(this.connection);
    this.client = client;
    // Without an 'error' listener a dropped connection would crash the process.
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, null));
    client.on('notification', (message) => {
      if (message.channel === KEYS_CHANGED_CHANNEL) this.revision += 1;
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${KEYS_CHANGED_CHANNEL}`);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.client !== client) {
      // Closed (or replaced) while connecting.
      await client.end().catch(() => undefined);
      return;
    }
    // Changes made while we were not listening were missed; this bump makes caches drop them.
    this.revision += 1;
    this.listening = true;
    this.reconnectDelay = RECONNECT_FIRST_DELAY_MS;
    this.heartbeatTimer = setInterval(() => {
      client.query('SELECT 1').catch((error: Error) => this.lost(client, error));
    }, HEARTBEAT_INTERVAL_MS);
    this.heartbeatTimer.unref();
  }

  /** Handles the loss of `client` once (errors and 'end' both arrive) and schedules a reconnect. */
  private lost(client: Client, error: Error | null): void {
    if (this.client !== client) return;
    this.client = null;
    this.listening = false;
    this.revision += 1;
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    client.end().catch(() => undefined);
    if (error !== null) this.onError(error);
    if (this.closed) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, this.reconnectDelay);
    this.reconnectTimer.unref();
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_DELAY_MS);
  }
}
