// A small key-value StateMachine for tests and benchmarks. Commands are msgpack-encoded
// {op:'put'|'delete'|'cas'}; every result is a closed tagged union carrying the previous
// value. A command that does not decode is a deterministic no-op on every replica, answered
// with kind 'invalid'. The snapshot is msgpack over the pairs sorted by key, so equal states
// give equal bytes on every replica.

import assert from 'node:assert';
import { Packr } from 'msgpackr';
import type { StateMachine } from './state-machine.js';
import type { Entry } from './types.js';

export type KvValue = string | Uint8Array;

export type KvCommand =
  | { readonly op: 'put'; readonly key: string; readonly value: KvValue }
  | { readonly op: 'delete'; readonly key: string }
  /** Sets `value` only if the current value equals `expected` (null: the key is absent). */
  | { readonly op: 'cas'; readonly key: string; readonly expected: KvValue | null; readonly value: KvValue };

export type KvResult =
  | { readonly kind: 'done'; readonly previous: KvValue | null }
  | { readonly kind: 'cas-failed'; readonly previous: KvValue | null }
  /** A retried client request that was applied already: nothing changed. */
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'invalid'; readonly reason: string };

const packr = new Packr({ useRecords: false });

export function encodeKvCommand(c: KvCommand): Uint8Array {
  return packr.pack(c);
}

/** A plain Uint8Array view (msgpackr hands out Buffers, which compare and print differently). */
function plainBytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function isValue(x: unknown): x is KvValue {
  return typeof x === 'string' || x instanceof Uint8Array;
}

function normalize(v: KvValue): KvValue {
  return typeof v === 'string' ? v : plainBytes(v);
}

/** The command in `data`, or why it is not one. Pure: validation happens at the door of apply. */
export function decodeKvCommand(data: Uint8Array): KvCommand | { readonly invalid: string } {
  let v: unknown;
  try {
    v = packr.unpack(data);
  } catch (err) {
    // Bad input from a client is an expected outcome, reported as a value, not a crash.
    return { invalid: `not msgpack: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (typeof v !== 'object' || v === null) return { invalid: 'command is not a map' };
  const c = v as Record<string, unknown>;
  if (typeof c.key !== 'string') return { invalid: 'key must be a string' };
  switch (c.op) {
    case 'put':
      if (!isValue(c.value)) return { invalid: 'put: value must be a string or bytes' };
      return { op: 'put', key: c.key, value: normalize(c.value) };
    case 'delete':
      return { op: 'delete', key: c.key };
    case 'cas':
      if (!isValue(c.value)) return { invalid: 'cas: value must be a string or bytes' };
      if (c.expected !== null && !isValue(c.expected)) return { invalid: 'cas: expected must be a string, bytes or null' };
      return { op: 'cas', key: c.key, expected: c.expected === null ? null : normalize(c.expected), value: normalize(c.value) };
    default:
      return { invalid: `unknown op ${JSON.stringify(c.op)}` };
  }
}

export function sameValue(a: KvValue | null, b: KvValue | null): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return Buffer.compare(a, b) === 0;
}

export class KvStateMachine implements StateMachine {
  private data = new Map<string, KvValue>();

  get(key: string): KvValue | undefined {
    return this.data.get(key);
  }

  get size(): number {
    return this.data.size;
  }

  /** A copy of every key and value. */
  entries(): Map<string, KvValue> {
    return new Map(this.data);
  }

  apply(entry: Entry, duplicate: boolean): KvResult {
    if (duplicate) return { kind: 'duplicate' };
    const c = decodeKvCommand(entry.data);
    if ('invalid' in c) return { kind: 'invalid', reason: c.invalid };
    const previous = this.data.get(c.key) ?? null;
    switch (c.op) {
      case 'put':
        this.data.set(c.key, c.value);
        return { kind: 'done', previous };
      case 'delete':
        this.data.delete(c.key);
        return { kind: 'done', previous };
      case 'cas':
        if (!sameValue(previous, c.expected)) return { kind: 'cas-failed', previous };
        this.data.set(c.key, c.value);
        return { kind: 'done', previous };
    }
  }

  snapshot(): Uint8Array {
    // The default sort orders strings by UTF-16 code units, as < does, and V8 runs it natively:
    // sorting the pairs with a comparator took most of a snapshot's time (~80 of ~85 ms for
    // 60,000 keys), and snapshots were a large part of a member's CPU under load.
    const keys = [...this.data.keys()].sort();
    const pairs = keys.map((k) => [k, this.data.get(k) as KvValue]);
    return packr.pack(pairs);
  }

  restore(data: Uint8Array): void {
    // A snapshot comes from our own snapshot() through checksummed storage or the leader:
    // a malformed one is a bug, not input to recover from.
    const pairs: unknown = packr.unpack(data);
    assert(Array.isArray(pairs), 'kv snapshot: not an array of pairs');
    const next = new Map<string, KvValue>();
    for (const p of pairs as unknown[]) {
      assert(Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && isValue(p[1]), 'kv snapshot: malformed pair');
      next.set(p[0], normalize(p[1]));
    }
    this.data = next;
  }
}
