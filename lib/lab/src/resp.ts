/**
 * A minimal Redis client (RESP2) for the benchmarks that compare against Debian's redis-server:
 * one TCP connection, commands pipelined (each `cmd` is written at once; replies come back in
 * order), replies parsed exactly (simple strings, errors, integers, bulk strings by their
 * length, arrays). Nothing is retried: a broken connection fails every pending command.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { LabError } from './errors.js';

export type RespValue = string | number | null | RespValue[];

/** Parses one RESP2 value at `at`; undefined when `buf` does not hold all of it yet. */
export function parseResp(buf: Buffer, at = 0): { value: RespValue; next: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const line = buf.toString('utf8', at + 1, eol);
  const after = eol + 2;
  switch (buf[at]) {
    case 0x2b: // +
      return { value: line, next: after };
    case 0x2d: // -
      throw new LabError('EDGE_LAB_REDIS', `redis answered an error: ${line}`);
    case 0x3a: // :
      return { value: Number(line), next: after };
    case 0x24: {
      // $
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      if (buf.length < after + n + 2) return undefined;
      return { value: buf.toString('utf8', after, after + n), next: after + n + 2 };
    }
    case 0x2a: {
      // *
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      const out: RespValue[] = [];
      let next = after;
      for (let i = 0; i < n; i++) {
        const r = parseResp(buf, next);
        if (!r) return undefined;
        out.push(r.value);
        next = r.next;
      }
      return { value: out, next };
    }
    default:
      throw new LabError('EDGE_LAB_REDIS', `not a RESP reply: ${JSON.stringify(buf.toString('utf8', at, Math.min(buf.length, at + 40)))}`);
  }
}

/** One connection to a Redis server; concurrent commands are pipelined. */
export class RespClient {
  private buf: Buffer = Buffer.alloc(0);
  private readonly waiting: { ok(v: RespValue): void; fail(e: Error): void }[] = [];

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.onData(d));
    const broken = (why: string) => {
      for (const w of this.waiting.splice(0)) w.fail(new LabError('EDGE_LAB_REDIS', `redis connection ${why}`));
    };
    socket.on('error', (e) => broken(`failed: ${e.message}`));
    socket.on('close', () => broken('closed'));
  }

  static async open(host: string, port: number): Promise<RespClient> {
    const s = connect(port, host);
    await Promise.race([
      once(s, 'connect'),
      once(s, 'error').then(([e]) => {
        throw new LabError('EDGE_LAB_REDIS', `cannot connect to redis at ${host}:${port}: ${(e as Error).message}`);
      }),
    ]);
    return new RespClient(s);
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    let at = 0;
    for (;;) {
      let r: ReturnType<typeof parseResp>;
      try {
        r = parseResp(this.buf, at);
      } catch (err) {
        // An error reply belongs to the command it answers: find where it ends and fail that one.
        const eol = this.buf.indexOf('\r\n', at);
        at = eol + 2;
        this.waiting.shift()?.fail(err as Error);
        continue;
      }
      if (!r) break;
      at = r.next;
      this.waiting.shift()?.ok(r.value);
    }
    this.buf = at >= this.buf.length ? Buffer.alloc(0) : this.buf.subarray(at);
  }

  /** Sends one command (written at once: concurrent calls are pipelined) and resolves with its reply. */
  cmd(...parts: string[]): Promise<RespValue> {
    return new Promise((ok, fail) => {
      this.waiting.push({ ok, fail });
      this.socket.write(`*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
