import { CrdtError } from './errors.js';
import type { CrdtTypeName } from './types.js';

/** Wire format version: byte 0 of every encoding. Bump on any change (INTERNALS.md, "Encoding"). */
export const ENCODING_VERSION = 1;

/** Byte 1 of every encoding: which type the state belongs to. Never reuse a tag. */
export const TYPE_TAGS: Readonly<Record<CrdtTypeName, number>> = {
  ewflag: 1,
  gcounter: 2,
  pncounter: 3,
  gset: 4,
  mvregister: 5,
  orset: 6,
  lwwregister: 7,
  ormap: 8,
};

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Append-only byte buffer with the primitives of the v1 format. */
export class Writer {
  private buf = new Uint8Array(64);
  private len = 0;

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  byte(b: number): this {
    this.ensure(1);
    this.buf[this.len++] = b & 0xff;
    return this;
  }

  /** Unsigned LEB128 of a non-negative safe integer (arithmetic, not bitwise: values exceed 2^32). */
  uint(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new RangeError(`uint(${n}): not a non-negative safe integer`);
    }
    while (n >= 0x80) {
      this.byte((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    return this.byte(n);
  }

  /** UTF-8 string prefixed with its byte length. */
  string(s: string): this {
    const bytes = textEncoder.encode(s);
    this.uint(bytes.length);
    this.ensure(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
    return this;
  }

  header(type: CrdtTypeName): this {
    return this.byte(ENCODING_VERSION).byte(TYPE_TAGS[type]);
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Strict reader: every malformed input becomes CrdtError('EDGE_MISO_BAD_ENCODING'). */
export class Reader {
  private pos = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly type: CrdtTypeName,
  ) {
    if (!(bytes instanceof Uint8Array)) {
      throw new CrdtError('EDGE_MISO_BAD_ENCODING', `${type}: decode() needs a Uint8Array`);
    }
  }

  fail(what: string): never {
    throw new CrdtError('EDGE_MISO_BAD_ENCODING', `${this.type}: ${what} (at byte ${this.pos} of ${this.bytes.length})`);
  }

  byte(): number {
    const b = this.bytes[this.pos];
    if (b === undefined) this.fail('unexpected end of input');
    this.pos++;
    return b;
  }

  /** Unsigned LEB128, minimal form only, at most Number.MAX_SAFE_INTEGER. */
  uint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (i >= 8) this.fail('varint longer than 8 bytes');
      const b = this.byte();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) this.fail('varint not in minimal form');
        break;
      }
      scale *= 0x80;
    }
    if (!Number.isSafeInteger(result)) this.fail('varint exceeds Number.MAX_SAFE_INTEGER');
    return result;
  }

  /** A count of items that each take at least `minItemBytes` bytes: bounded by what is left. */
  count(minItemBytes = 1): number {
    const n = this.uint();
    if (n * minItemBytes > this.bytes.length - this.pos) this.fail(`count ${n} larger than the remaining input`);
    return n;
  }

  string(): string {
    const n = this.uint();
    if (n > this.bytes.length - this.pos) this.fail(`string of ${n} bytes runs past the end`);
    const slice = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    try {
      return textDecoder.decode(slice);
    } catch (err) {
      return this.fail(`string is not valid UTF-8 (${(err as Error).message})`);
    }
  }

  header(): void {
    const version = this.byte();
    if (version !== ENCODING_VERSION) this.fail(`unsupported format version ${version}; this build reads ${ENCODING_VERSION}`);
    const tag = this.byte();
    if (tag !== TYPE_TAGS[this.type]) {
      const other = (Object.keys(TYPE_TAGS) as CrdtTypeName[]).find((k) => TYPE_TAGS[k] === tag);
      this.fail(`type tag ${tag}${other ? ` (${other})` : ''} is not the tag of ${this.type} (${TYPE_TAGS[this.type]})`);
    }
  }

  end(): void {
    if (this.pos !== this.bytes.length) this.fail(`${this.bytes.length - this.pos} trailing bytes`);
  }
}

/**
 * Runs a decoder body; any non-CrdtError thrown inside (a bug or hostile input
 * tripping an invariant) is converted to EDGE_MISO_BAD_ENCODING with the cause kept.
 */
export function decodeWith<S>(type: CrdtTypeName, bytes: Uint8Array, body: (r: Reader) => S): S {
  const r = new Reader(bytes, type);
  try {
    r.header();
    const s = body(r);
    r.end();
    return s;
  } catch (err) {
    if (err instanceof CrdtError) {
      if (err.code === 'EDGE_MISO_BAD_ENCODING') throw err;
      throw new CrdtError('EDGE_MISO_BAD_ENCODING', `${type}: invalid content: ${err.message}`, { cause: err });
    }
    throw new CrdtError('EDGE_MISO_BAD_ENCODING', `${type}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
