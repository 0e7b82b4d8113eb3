/**
 * A MISO Object as the function sees it: `context.statefulObject`, a bundle of named CRDTs
 * held by the node's agent and replicated to the other nodes that run the function.
 *
 *   await so.getGCounter('totalSum').add(1);
 *   const total = await so.getGCounter('totalSum').value();
 *
 * The getters are cheap handles (no call until an operation); the same type may appear
 * under several names. Using a name with another type than it holds fails with
 * EDGE_MISO_WRONG_TYPE.
 */
import type { MisoClient } from './client.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Scalar = null | boolean | number | string;

class Handle {
  constructor(
    protected readonly so: StatefulObject,
    readonly name: string,
    readonly type: string,
  ) {}
  protected op(op: unknown): Promise<void> {
    return this.so.client.apply(this.so.fn, this.so.id, this.name, this.type, op) as Promise<void>;
  }
  protected async read<T>(): Promise<T> {
    return (await this.so.client.read(this.so.fn, this.so.id, this.name, this.type)).value as T;
  }
  /** Deletes this CRDT from the object on every node. */
  async delete(): Promise<boolean> {
    return (await this.so.client.delete(this.so.fn, this.so.id, this.name)) > 0;
  }
}

export class GCounter extends Handle {
  add(n = 1): Promise<void> {
    return this.op({ op: 'add', n });
  }
  value(): Promise<number> {
    return this.read();
  }
}

export class PNCounter extends Handle {
  add(n = 1): Promise<void> {
    return this.op({ op: 'add', n });
  }
  subtract(n = 1): Promise<void> {
    return this.op({ op: 'add', n: -n });
  }
  value(): Promise<number> {
    return this.read();
  }
}

export class EWFlag extends Handle {
  enable(): Promise<void> {
    return this.op({ op: 'enable' });
  }
  disable(): Promise<void> {
    return this.op({ op: 'disable' });
  }
  value(): Promise<boolean> {
    return this.read();
  }
}

export class GSet<T extends Scalar = Scalar> extends Handle {
  add(value: T): Promise<void> {
    return this.op({ op: 'add', value });
  }
  value(): Promise<T[]> {
    return this.read();
  }
}

export class ORSet<T extends Scalar = Scalar> extends Handle {
  add(value: T): Promise<void> {
    return this.op({ op: 'add', value });
  }
  remove(value: T): Promise<void> {
    return this.op({ op: 'remove', value });
  }
  value(): Promise<T[]> {
    return this.read();
  }
}

/** Multi-value register: concurrent writes all survive until the next write; value() lists them. */
export class MVRegister<T extends Json = Json> extends Handle {
  set(value: T): Promise<void> {
    return this.op({ op: 'set', value });
  }
  value(): Promise<T[]> {
    return this.read();
  }
}

/** Last-writer-wins register (hybrid logical clock). */
export class LWWRegister<T extends Json = Json> extends Handle {
  set(value: T): Promise<void> {
    return this.op({ op: 'set', value });
  }
  value(): Promise<T | null> {
    return this.read();
  }
}

export class ORMap extends Handle {
  set(key: string, value: Json): Promise<void> {
    return this.op({ op: 'set', key, value });
  }
  remove(key: string): Promise<void> {
    return this.op({ op: 'remove', key });
  }
  value(): Promise<Record<string, Json>> {
    return this.read();
  }
}

export class StatefulObject {
  constructor(
    readonly client: MisoClient,
    readonly fn: string,
    readonly id: string,
  ) {}

  getGCounter(name: string): GCounter {
    return new GCounter(this, name, 'gcounter');
  }
  getPNCounter(name: string): PNCounter {
    return new PNCounter(this, name, 'pncounter');
  }
  getEWFlag(name: string): EWFlag {
    return new EWFlag(this, name, 'ewflag');
  }
  getGSet<T extends Scalar = Scalar>(name: string): GSet<T> {
    return new GSet<T>(this, name, 'gset');
  }
  getORSet<T extends Scalar = Scalar>(name: string): ORSet<T> {
    return new ORSet<T>(this, name, 'orset');
  }
  getMVRegister<T extends Json = Json>(name: string): MVRegister<T> {
    return new MVRegister<T>(this, name, 'mvregister');
  }
  getLWWRegister<T extends Json = Json>(name: string): LWWRegister<T> {
    return new LWWRegister<T>(this, name, 'lwwregister');
  }
  getORMap(name: string): ORMap {
    return new ORMap(this, name, 'ormap');
  }

  /** Every CRDT of the object, by name. */
  async values(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const c of await this.client.readObject(this.fn, this.id)) out[c.name] = c.value;
    return out;
  }

  /** Deletes the whole object on every node; returns how many CRDTs it held. */
  delete(): Promise<number> {
    return this.client.delete(this.fn, this.id);
  }
}
