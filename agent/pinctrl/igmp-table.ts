// One snooping datapath's multicast state, as Open vSwitch's lib/mcast-snooping.c keeps it for
// ovn-controller: groups (by address, as IGMP_Group.address spells it), each with its member
// ports (logical port tunnel keys) and when each membership expires, and the ports a query came
// from (multicast routers, kept 180 s). Pure: time is an argument, in ms of the caller's clock.
//
// The rules carried over from mcast-snooping.c: a join refreshes the member's expiry to
// idle_timeout from now and makes the group the most recently used; a port known as a router
// does not join groups (its traffic goes to the routers anyway); a new group when table_size
// groups are known pushes out the least recently used one; a leave removes the member at once,
// and a group without members is gone; idle_timeout is held to 15..3600 s and table_size to
// 10..1,000,000, as OVS holds them.

import assert from 'node:assert/strict';

/** MCAST_ENTRY_DEFAULT_IDLE_TIME, MCAST_DEFAULT_MAX_ENTRIES, MCAST_MROUTER_PORT_IDLE_TIME. */
export const mcastDefaults = { idleTimeoutS: 300, tableSize: 2048, mrouterIdleS: 180 } as const;
const IDLE_TIMEOUT_S_MIN = 15;
const IDLE_TIMEOUT_S_MAX = 3600;
const TABLE_SIZE_MIN = 10;
const TABLE_SIZE_MAX = 1_000_000;

export function normalizeIdleTimeoutS(s: number): number {
  return Math.min(IDLE_TIMEOUT_S_MAX, Math.max(IDLE_TIMEOUT_S_MIN, Math.floor(s)));
}

export function normalizeTableSize(n: number): number {
  return Math.min(TABLE_SIZE_MAX, Math.max(TABLE_SIZE_MIN, Math.floor(n)));
}

/** A group's members by port key, with when each expires. */
type Members = Map<number, number>;

export class McastGroupTable {
  /** Groups in least-recently-used order (a join moves its group to the end). */
  private readonly groups = new Map<string, Members>();
  /** Router ports in least-recently-used order, with when each expires. */
  private readonly mrouters = new Map<number, number>();
  private tableSize: number;
  private idleMs: number;

  constructor(tableSize: number = mcastDefaults.tableSize, idleTimeoutS: number = mcastDefaults.idleTimeoutS) {
    this.tableSize = normalizeTableSize(tableSize);
    this.idleMs = normalizeIdleTimeoutS(idleTimeoutS) * 1000;
  }

  /** New limits; the members' expiries move by the change of idle time (mcast_snooping_set_idle_time). */
  configure(tableSize: number, idleTimeoutS: number): void {
    this.tableSize = normalizeTableSize(tableSize);
    const idleMs = normalizeIdleTimeoutS(idleTimeoutS) * 1000;
    const delta = idleMs - this.idleMs;
    if (delta !== 0) for (const members of this.groups.values()) for (const [p, at] of members) members.set(p, at + delta);
    this.idleMs = idleMs;
  }

  get groupsN(): number {
    return this.groups.size;
  }

  /** Port `port` joins `group`; true when that is new (a new group or a new member). */
  join(group: string, port: number, nowMs: number): boolean {
    if (this.mrouters.has(port)) return false;
    let members = this.groups.get(group);
    let learned = false;
    if (members === undefined) {
      if (this.groups.size >= this.tableSize) {
        const lru = this.groups.keys().next();
        assert(lru.done !== true, 'a full table has a least recently used group');
        this.groups.delete(lru.value);
      }
      members = new Map();
      learned = true;
    } else {
      this.groups.delete(group);
    }
    this.groups.set(group, members);
    if (!members.has(port)) learned = true;
    members.delete(port);
    members.set(port, nowMs + this.idleMs);
    return learned;
  }

  /** Port `port` leaves `group`; true when it was a member. */
  leave(group: string, port: number): boolean {
    const members = this.groups.get(group);
    if (members === undefined || !members.delete(port)) return false;
    if (members.size === 0) this.groups.delete(group);
    return true;
  }

  /** A query came in on `port`: it leads to a multicast router. True when that is new. */
  addMrouter(port: number, nowMs: number): boolean {
    const known = this.mrouters.delete(port);
    this.mrouters.set(port, nowMs + mcastDefaults.mrouterIdleS * 1000);
    return !known;
  }

  /** Forgets every group and router (IP_Multicast.seq_no moved: mcast_snooping_flush). */
  flush(): boolean {
    const had = this.groups.size > 0 || this.mrouters.size > 0;
    this.groups.clear();
    this.mrouters.clear();
    return had;
  }

  /** Drops the memberships and routers whose time is up; true when anything went. */
  expire(nowMs: number): boolean {
    let changed = false;
    for (const [group, members] of this.groups) {
      for (const [port, at] of members) {
        if (at > nowMs) continue;
        members.delete(port);
        changed = true;
      }
      if (members.size === 0) this.groups.delete(group);
    }
    for (const [port, at] of this.mrouters) {
      if (at > nowMs) continue;
      this.mrouters.delete(port);
      changed = true;
    }
    return changed;
  }

  /** When the next membership or router expires (Infinity: none). */
  nextExpiryMs(): number {
    let at = Infinity;
    for (const members of this.groups.values()) for (const e of members.values()) at = Math.min(at, e);
    for (const e of this.mrouters.values()) at = Math.min(at, e);
    return at;
  }

  /** Every group with its member port keys, sorted by address; the keys sorted too. */
  groupMembers(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const g of [...this.groups.keys()].sort()) out.set(g, [...(this.groups.get(g) as Members).keys()].sort((a, b) => a - b));
    return out;
  }

  /** The router port keys, sorted. */
  mrouterPorts(): number[] {
    return [...this.mrouters.keys()].sort((a, b) => a - b);
  }
}
