// The simulator's state machine: a key-value register map. Writes arrive as log entries
// tagged with (client id, sequence) and are applied at most once (ClientSessions); reads are
// served locally after ReadIndex. Its snapshot is a JSON image.

import assert from 'node:assert';
import { ClientSessions } from '../../../cluster/session.js';
import type { Entry } from '../../../cluster/types.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface KvWrite {
  readonly key: string;
  readonly value: string;
}

export function encodeWrite(w: KvWrite): Uint8Array {
  return encoder.encode(JSON.stringify(w));
}

export class Kv {
  private readonly data = new Map<string, string>();
  private sessions = new ClientSessions();
  appliedIndex = 0;

  /** Applies one committed entry; returns the write if it took effect (not a duplicate). */
  apply(e: Entry): KvWrite | undefined {
    assert.equal(e.index, this.appliedIndex + 1, `kv: applying ${e.index} after ${this.appliedIndex}`);
    this.appliedIndex = e.index;
    if (e.type !== 'normal') return undefined;
    if (!this.sessions.shouldApply(e)) return undefined;
    const w = JSON.parse(decoder.decode(e.data)) as KvWrite;
    this.data.set(w.key, w.value);
    return w;
  }

  get(key: string): string | undefined {
    return this.data.get(key);
  }

  snapshot(): Uint8Array {
    const image = { data: [...this.data].sort(), sessions: this.sessions.entries(), index: this.appliedIndex };
    return encoder.encode(JSON.stringify(image));
  }

  static restore(bytes: Uint8Array, index: number): Kv {
    const kv = new Kv();
    if (bytes.byteLength === 0) {
      kv.appliedIndex = index;
      return kv;
    }
    const image = JSON.parse(decoder.decode(bytes)) as {
      data: [string, string][];
      sessions: [string, number][];
      index: number;
    };
    assert.equal(image.index, index, 'kv: snapshot image index mismatch');
    for (const [k, v] of image.data) kv.data.set(k, v);
    kv.sessions = ClientSessions.fromEntries(image.sessions);
    kv.appliedIndex = index;
    return kv;
  }

  fingerprint(): string {
    return JSON.stringify([...this.data].sort());
  }
}
