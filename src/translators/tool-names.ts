/**
 * Tool names that cross protocols. Anthropic accepts `^[a-zA-Z0-9_-]{1,128}$`, OpenAI at most 64 of the
 * same characters; a name that does not fit the upstream's rule is rewritten, and every reply maps
 * the rewritten name back so the client sees exactly the name it declared.
 */
import { createHash } from 'node:crypto';

const INVALID_CHARACTERS = /[^a-zA-Z0-9_-]/g;
/** Characters kept from the hash suffix of a shortened name: enough to keep distinct names distinct. */
const HASH_LENGTH = 8;

export class ToolNameMap {
  private readonly toUpstream = new Map<string, string>();
  private readonly toClient = new Map<string, string>();

  /** @param maxLength the upstream's longest allowed name (64 for OpenAI, 128 for Anthropic). */
  constructor(private readonly maxLength: number) {}

  /** The name to send upstream for a client's tool name; the same name always maps the same way. */
  upstream(clientName: string): string {
    const known = this.toUpstream.get(clientName);
    if (known !== undefined) return known;
    let name = clientName.replace(INVALID_CHARACTERS, '_');
    if (name === '') name = '_';
    if (name !== clientName || name.length > this.maxLength) {
      // A digest of the original keeps two names that sanitise alike ("a.b", "a:b") apart.
      const digest = createHash('sha256').update(clientName).digest('hex').slice(0, HASH_LENGTH);
      name = `${name.slice(0, this.maxLength - HASH_LENGTH - 1)}_${digest}`;
    }
    this.toUpstream.set(clientName, name);
    this.toClient.set(name, clientName);
    return name;
  }

  /** The client's name for a name the upstream used; unknown names pass through unchanged. */
  client(upstreamName: string): string {
    return this.toClient.get(upstreamName) ?? upstreamName;
  }
}
