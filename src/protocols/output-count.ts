/**
 * Counts the output tokens of a stream as its events pass, for billing when the upstream reports no
 * usage or the stream is cut short. Memory stays bounded however long the stream runs: the events'
 * data are held in a window of at most `WINDOW_CHARS`, and each time it fills, its text goes to the
 * tokenizer's worker thread and is let go here (the last unfinished word is kept, so a word split over
 * two events is counted once). At most `WINDOWS_IN_FLIGHT` windows wait for their count: a stream that
 * outruns the tokenizer is paced by its relay through `behind()`, so nothing piles up in the worker either.
 */
import { countEventTokensAsync, countTokensAsync } from '../billing/tokenizer';
import { eventText } from './output-text';
import type { EndpointId } from './types';

/** What is held before counting: a few ms of tokenizing, and nothing at all for short replies. */
const WINDOW_CHARS = 64 * 1024;
/**
 * An event at least this large (an image in a chunk) is sent to the tokenizer's thread as it came, to be
 * parsed there: parsing it here would hold the event loop for as long as a MiB-sized JSON.parse takes.
 */
const LARGE_EVENT_CHARS = 256 * 1024;
/** Windows sent and not counted yet, beyond which the stream should wait: one counting, one queued. */
const WINDOWS_IN_FLIGHT = 2;

/** Index just before the last whitespace of `text` (0 when there is none): where a word may start. */
function lastWordStart(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) {
    const code = text.charCodeAt(i);
    if (code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d) return i;
  }
  return 0;
}

export class OutputTokenCount {
  /** Event data not read yet. */
  private events: string[] = [];
  private eventChars = 0;
  /** Text read but not counted: the tail that may continue in the next event. */
  private text = '';
  private counted = 0;
  /** Counts of windows sent to the tokenizer and not answered yet; none of them rejects. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Why a window could not be counted: `total()` then fails rather than bill less than was relayed. */
  private failure: { readonly error: unknown } | null = null;

  constructor(private readonly endpoint: EndpointId) {}

  /** One event's data, in stream order. */
  add(data: string): void {
    if (data.length >= LARGE_EVENT_CHARS) {
      // Handed over in a turn of its own: copying it to the thread is not added to the relay's turn.
      this.addCounted(new Promise<void>((resolve) => setImmediate(resolve)).then(() => countEventTokensAsync(this.endpoint, data)));
      return;
    }
    this.events.push(data);
    this.eventChars += data.length;
    if (this.eventChars > WINDOW_CHARS) this.countWindow();
  }

  /** The tokens of one event's output counted elsewhere (a large event read in the tokenizer's thread), in stream order. */
  addCounted(tokens: Promise<number>): void {
    // What came before is counted first; a word split across the boundary may count one token more.
    this.read();
    this.send(this.text);
    this.text = '';
    this.track(tokens);
  }

  /**
   * Null while the tokenizer keeps up with this stream; otherwise a promise (never rejected) that
   * resolves once it has room again. The relay stops reading the upstream until then.
   */
  behind(): Promise<void> | null {
    return this.inFlight.size < WINDOWS_IN_FLIGHT ? null : Promise.race(this.inFlight);
  }

  /** The tokens of everything added so far. */
  async total(): Promise<number> {
    this.read();
    this.send(this.text);
    this.text = '';
    await Promise.all(this.inFlight);
    if (this.failure !== null) throw this.failure.error;
    return this.counted;
  }

  private read(): void {
    for (const data of this.events) this.text += eventText(this.endpoint, data);
    this.events = [];
    this.eventChars = 0;
  }

  private countWindow(): void {
    this.read();
    // A tail with no space in a full window is one long word: counted now rather than held on.
    const cut = this.text.length > WINDOW_CHARS ? this.text.length : lastWordStart(this.text);
    if (cut === 0) return;
    this.send(this.text.slice(0, cut));
    this.text = this.text.slice(cut);
  }

  private send(text: string): void {
    if (text === '') return;
    this.track(countTokensAsync(text));
  }

  private track(tokens: Promise<number>): void {
    const counting: Promise<void> = tokens
      .then(
        (tokens) => void (this.counted += tokens),
        (error: unknown) => void (this.failure ??= { error }),
      )
      .finally(() => this.inFlight.delete(counting));
    this.inFlight.add(counting);
  }
}
