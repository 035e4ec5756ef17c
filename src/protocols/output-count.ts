/**
 * Counts the output tokens of a stream as its events pass, for billing when the upstream reports no
 * usage or the stream is cut short. Memory stays bounded however long the stream runs: the events'
 * data are held in a window of at most `WINDOW_CHARS`, and each time it fills, their text is counted
 * and let go (the last unfinished word is kept, so a word split over two events is counted once).
 * Each fill costs time linear in the window, so the count over a stream is linear in its size.
 */
import { countTokens, countTokensAsync } from '../billing/tokenizer';
import { eventText } from './output-text';
import type { EndpointId } from './types';

/** What is held before counting: a few ms of tokenizing at worst, and nothing at all for short replies. */
const WINDOW_CHARS = 64 * 1024;

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
  /** Counting of texts too long to count at once (one huge event), running in yielding slices. */
  private background: Promise<void> = Promise.resolve();

  constructor(private readonly endpoint: EndpointId) {}

  /** One event's data, in stream order. */
  add(data: string): void {
    this.events.push(data);
    this.eventChars += data.length;
    if (this.eventChars > WINDOW_CHARS) this.countWindow();
  }

  /** The tokens of everything added so far; counting what is still held yields to the event loop. */
  async total(): Promise<number> {
    this.read();
    const rest = this.text;
    this.text = '';
    this.counted += await countTokensAsync(rest);
    await this.background;
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
    const text = this.text.slice(0, cut);
    this.text = this.text.slice(cut);
    if (text.length <= 2 * WINDOW_CHARS) {
      this.counted += countTokens(text);
      return;
    }
    // Only one event larger than the window gets here; its text is held until counted.
    this.background = this.background.then(async () => void (this.counted += await countTokensAsync(text)));
  }
}
