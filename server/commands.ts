// The commands of the replicated log: what a central node proposes and every replica applies.
// Encoded with msgpackr as arrays (kind first), so the bytes depend only on the command.
// Everything apply needs that would otherwise be chosen at random or read from a clock is in
// the command: the UUID seed of a transaction is drawn by the node that proposes it.
import { Packr } from 'msgpackr';
import type { RbacSession, UuidSeed } from '../ovsdb/index.js';

export type Command =
  /**
   * One OVSDB transaction on OVN_Northbound: the ops of a "transact" request, without the db
   * name. `elapsedMs` is how long the request has waited so far (for "wait" timeouts);
   * `timestampMs` is the proposer's wall clock, for the *_cfg_timestamp columns apply writes.
   */
  | { readonly kind: 'nb-txn'; readonly ops: readonly unknown[]; readonly seed: UuidSeed; readonly elapsedMs: number; readonly timestampMs: number }
  /**
   * One OVSDB transaction on OVN_Southbound from a chassis: the chassis-owned tables and
   * Port_Binding's chassis-owned columns (server/chassis-store.ts). Same fields as nb-txn, and
   * `rbac`, the role and client id of a session whose remote has a role (OVN's RBAC), whose
   * writes apply holds to that role's permissions (from apply version 11; refused before).
   */
  | { readonly kind: 'sb-txn'; readonly ops: readonly unknown[]; readonly seed: UuidSeed; readonly elapsedMs: number; readonly timestampMs: number; readonly rbac?: RbacSession }
  /**
   * Several NB transactions in one entry (group commit): each is applied on its own, in order,
   * and succeeds or fails on its own; northd projects once, after the last. The leader groups
   * the transactions that reach it in one turn of its event loop, so one entry, one persist and
   * one projection serve them all. Each member is an encoded nb-txn command.
   */
  | { readonly kind: 'nb-group'; readonly txns: readonly NbTxnCommand[] }
  /**
   * Moves the cluster to apply version `version` (server/apply-version.ts): entries after it
   * are applied the way that version says. Proposed by a leader once every member told it can;
   * `seed` makes the UUIDs of the NB writes the move itself makes.
   */
  | { readonly kind: 'apply-version'; readonly version: number; readonly seed: UuidSeed };

export type NbTxnCommand = Extract<Command, { kind: 'nb-txn' }>;

export function nbTxn(ops: readonly unknown[], seed: UuidSeed, elapsedMs = 0, timestampMs = 0): NbTxnCommand {
  return { kind: 'nb-txn', ops, seed, elapsedMs, timestampMs };
}

export function sbTxn(ops: readonly unknown[], seed: UuidSeed, elapsedMs = 0, timestampMs = 0, rbac?: RbacSession): Command {
  return rbac === undefined ? { kind: 'sb-txn', ops, seed, elapsedMs, timestampMs } : { kind: 'sb-txn', ops, seed, elapsedMs, timestampMs, rbac };
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export function encodeCommand(c: Command): Uint8Array {
  switch (c.kind) {
    case 'nb-txn':
      return packr.pack([c.kind, c.ops, [...c.seed], c.elapsedMs, c.timestampMs]);
    case 'sb-txn':
      // A session's RBAC rides as a sixth element, only when there is one: an unrestricted
      // write encodes as it always has. A build that predates it would ignore the element,
      // which is why such writes wait for apply version 11 (every member enforces them).
      return packr.pack(c.rbac === undefined
        ? [c.kind, c.ops, [...c.seed], c.elapsedMs, c.timestampMs]
        : [c.kind, c.ops, [...c.seed], c.elapsedMs, c.timestampMs, [c.rbac.role, c.rbac.id ?? null]]);
    case 'nb-group':
      return encodeNbGroup(c.txns.map(encodeCommand));
    case 'apply-version':
      return packr.pack([c.kind, c.version, [...c.seed]]);
  }
}

/** An nb-group command from nb-txn commands already encoded (what a proposer holds). */
export function encodeNbGroup(encodedTxns: readonly Uint8Array[]): Uint8Array {
  return packr.pack(['nb-group', encodedTxns]);
}

/** Decodes a command; a malformed one is reported, never thrown (it came from the log). */
export function decodeCommand(data: Uint8Array): Command | { readonly kind: 'malformed'; readonly reason: string } {
  let raw: unknown;
  try {
    raw = packr.unpack(data);
  } catch (err) {
    return { kind: 'malformed', reason: `not msgpack: ${(err as Error).message}` };
  }
  if (!Array.isArray(raw) || typeof raw[0] !== 'string') return { kind: 'malformed', reason: 'not a tagged command' };
  switch (raw[0]) {
    case 'nb-txn':
    case 'sb-txn': {
      const kind = raw[0];
      const [, ops, seed, elapsedMs, timestampMs = 0, rbacJson] = raw as [string, unknown, unknown, unknown, unknown, unknown];
      if (!Array.isArray(ops)) return { kind: 'malformed', reason: `${kind}: ops is not an array` };
      if (!isSeed(seed)) return { kind: 'malformed', reason: `${kind}: bad uuid seed` };
      if (typeof elapsedMs !== 'number' || !(elapsedMs >= 0)) return { kind: 'malformed', reason: `${kind}: bad elapsedMs` };
      if (typeof timestampMs !== 'number' || !Number.isSafeInteger(timestampMs) || timestampMs < 0) return { kind: 'malformed', reason: `${kind}: bad timestampMs` };
      if (kind === 'nb-txn') return nbTxn(ops, seed as unknown as UuidSeed, elapsedMs, timestampMs);
      if (rbacJson === undefined) return sbTxn(ops, seed as unknown as UuidSeed, elapsedMs, timestampMs);
      const rbac = rbacSessionOf(rbacJson);
      if (rbac === undefined) return { kind: 'malformed', reason: 'sb-txn: bad rbac (a non-empty role and an id or null)' };
      return sbTxn(ops, seed as unknown as UuidSeed, elapsedMs, timestampMs, rbac);
    }
    case 'nb-group': {
      const members = raw[1] as unknown;
      if (!Array.isArray(members) || members.length === 0) return { kind: 'malformed', reason: 'nb-group: no transactions' };
      const txns: NbTxnCommand[] = [];
      for (const [i, m] of members.entries()) {
        if (!(m instanceof Uint8Array)) return { kind: 'malformed', reason: `nb-group: member ${i} is not an encoded command` };
        const c = decodeCommand(m);
        if (c.kind === 'malformed') return { kind: 'malformed', reason: `nb-group: member ${i}: ${c.reason}` };
        if (c.kind !== 'nb-txn') return { kind: 'malformed', reason: `nb-group: member ${i} is ${c.kind}, not nb-txn` };
        txns.push(c);
      }
      return { kind: 'nb-group', txns };
    }
    case 'apply-version': {
      const [, version, seed] = raw as [string, unknown, unknown];
      if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) return { kind: 'malformed', reason: 'apply-version: bad version' };
      if (!isSeed(seed)) return { kind: 'malformed', reason: 'apply-version: bad uuid seed' };
      return { kind: 'apply-version', version, seed: seed as unknown as UuidSeed };
    }
    default:
      return { kind: 'malformed', reason: `unknown command kind ${JSON.stringify(raw[0])}` };
  }
}

/** An sb-txn's [role, id or null], as encodeCommand writes it; undefined for anything else. */
function rbacSessionOf(json: unknown): RbacSession | undefined {
  if (!Array.isArray(json) || json.length !== 2) return undefined;
  const [role, id] = json as [unknown, unknown];
  if (typeof role !== 'string' || role === '' || (id !== null && typeof id !== 'string')) return undefined;
  return id === null ? { role } : { role, id };
}

/** Four 32-bit words, not all zero. */
function isSeed(seed: unknown): boolean {
  return Array.isArray(seed) && seed.length === 4 && seed.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff) && !seed.every((w) => w === 0);
}
