// Splits a byte stream into JSON values, as OVSDB's JSON-RPC 1.0 sends them (RFC 7047 section
// 4): objects and arrays back to back with no framing. One implementation for both ends: the
// OVSDB door (server/) and the OVSDB client (ovsdb/jsonrpc-client.ts).
export class JsonValueTooLargeError extends Error {
  readonly kind = 'message too large';
  constructor(readonly bytesMax: number) {
    super(`incoming JSON value exceeds ${bytesMax} bytes`);
  }
}

export class JsonStreamSyntaxError extends Error {
  readonly kind = 'syntax error';
}

/**
 * The deepest nesting accepted by default, the top-level value counting as 1: ovsdb-server's
 * JSON parser refuses deeper input too. Much deeper values would overflow the stack of
 * JSON.stringify (and of any recursive walk) when a reply or an error is built from them.
 */
export const JSON_DEPTH_MAX_DEFAULT = 1000;

/**
 * The largest JSON value an OVSDB door reads by default (one request). The Northbound gRPC
 * server reads as much, since a follower forwards its doors' writes there.
 */
export const JSON_VALUE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/**
 * Tracks nesting depth and string state (with backslash escapes), so braces or quotes inside
 * strings never end a value. It scans bytes, not characters: UTF-8 continuation bytes never
 * collide with the ASCII delimiters, so a character split across chunks is reassembled before
 * decoding. Nesting deeper than depthMax is refused as soon as it is seen. Each complete value
 * goes to JSON.parse; a failure is thrown from feed(), after
 * which the splitter must not be fed again (the connection is closed).
 */
export class JsonValueSplitter {
  private readonly parts: Buffer[] = [];
  private partsBytes = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(
    private readonly bytesMax: number,
    private readonly depthMax: number = JSON_DEPTH_MAX_DEFAULT,
  ) {}

  /** Feeds one chunk; returns every value completed by it, in order. */
  feed(chunk: Buffer): unknown[] {
    const values: unknown[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.depth === 0) {
        if (isJsonWhitespace(byte)) {
          start = i + 1;
          continue;
        }
        if (byte !== OPEN_BRACE && byte !== OPEN_BRACKET) {
          throw new JsonStreamSyntaxError(`unexpected byte 0x${byte.toString(16)} between JSON values (only objects and arrays may appear at top level)`);
        }
        start = i;
        this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (byte === QUOTE) this.inString = true;
      else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        if (++this.depth > this.depthMax) throw new JsonStreamSyntaxError(`JSON value nested deeper than ${this.depthMax} levels`);
      }
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.depth--;
        if (this.depth === 0) {
          this.append(chunk.subarray(start, i + 1));
          values.push(this.takeValue());
          start = i + 1;
        }
      }
    }
    if (this.depth > 0) this.append(chunk.subarray(start));
    return values;
  }

  private append(part: Buffer): void {
    if (part.length === 0) return;
    this.partsBytes += part.length;
    if (this.partsBytes > this.bytesMax) throw new JsonValueTooLargeError(this.bytesMax);
    this.parts.push(Buffer.from(part));
  }

  private takeValue(): unknown {
    const text = Buffer.concat(this.parts, this.partsBytes).toString('utf8');
    this.parts.length = 0;
    this.partsBytes = 0;
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new JsonStreamSyntaxError(`invalid JSON value: ${(err as Error).message}`);
    }
  }
}
