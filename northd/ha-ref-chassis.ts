// HA_Chassis_Group.ref_chassis as ovn-northd 23.03 computes it: the chassis that have a port
// bound on a switch from which the group's distributed gateway port can be reached, so that
// ovn-controller on those chassis runs BFD to the group's members.
//
// 23.03's rule (build_lrouter_groups, collect_lb_groups_for_ha_chassis_groups,
// build_ha_chassis_group_ref_chassis): routers joined to each other, directly (an LRP peered
// with an LRP) or through switches (a switch's router ports), form a router group. A switch
// port bound to a chassis adds that chassis to the router group of its switch's routers. A
// group of more than one member, named by the chassisredirect port of a distributed gateway
// port of a router in such a router group, gets that router group's chassis; every other group
// gets none. Only switch ports count (a chassisredirect port's own chassis does not).
//
// We keep 23.03's router groups as the connected components of the graph whose nodes are
// datapaths and whose edges are those links (router LSP → its router, LRP → its peer LRP's
// router), each switch in the component of its routers. ovn-northd walks the links from each
// router in its own (hash) order and only through ports whose own peer is set, so it can give
// a different grouping when a link is one-sided (an LRP whose peer column names an LRP that
// names another); links are undirected here.
//
// Incremental upkeep: every bound port gives what it contributes (bound chassis, a link, the
// group of a chassisredirect port) through `setPort`. Links only added (a topology growing)
// merge components, the smaller into the larger; a link removed rebuilds the components of its
// ends by walking them again (cost: their size). A group's ref_chassis is recomputed only when
// something it reads changed.
import assert from 'node:assert/strict';
import type { Uuid } from '../ovsdb/index.js';
import { sameData } from './same-data.js';

/** What one bound port contributes to the reference chassis of the groups. */
export interface RefContribution {
  /** A switch port bound to a chassis: [switch datapath, Chassis UUID]. */
  readonly bound?: readonly [Uuid, Uuid] | undefined;
  /** A link between two datapaths: a router LSP and its router, an LRP and its peer's router. */
  readonly link?: readonly [Uuid, Uuid] | undefined;
  /** A chassisredirect port: [its router datapath, the name of the HA_Chassis_Group it names]. */
  readonly crGroup?: readonly [Uuid, string] | undefined;
}

/** A router group: datapaths joined by links, with what their ports contribute. */
interface Component {
  readonly dps: Set<Uuid>;
  /** Chassis UUID → switch ports of the component bound there. */
  readonly chassis: Map<Uuid, number>;
  /** Group name → chassisredirect ports of the component's routers naming it. */
  readonly groups: Map<string, number>;
}

const NO_REFS: readonly Uuid[] = Object.freeze([]);

function bump<K>(m: Map<K, number>, k: K, by: number): number {
  const n = (m.get(k) ?? 0) + by;
  assert.ok(n >= 0, 'ref_chassis: a count went below zero');
  if (n === 0) m.delete(k);
  else m.set(k, n);
  return n;
}

function bumpIn<K, L>(m: Map<K, Map<L, number>>, k: K, l: L, by: number): number {
  let inner = m.get(k);
  if (inner === undefined) m.set(k, (inner = new Map()));
  const n = bump(inner, l, by);
  if (inner.size === 0) m.delete(k);
  return n;
}

export class HaRefChassis {
  private readonly contributions = new Map<string, RefContribution>();
  /** Switch datapath → chassis → ports bound there. */
  private readonly boundBySwitch = new Map<Uuid, Map<Uuid, number>>();
  /** Datapath → linked datapath → number of links (both directions recorded). */
  private readonly links = new Map<Uuid, Map<Uuid, number>>();
  /** Router datapath → group name → its chassisredirect ports naming it. */
  private readonly groupsByRouter = new Map<Uuid, Map<string, number>>();
  /** Group name → router datapath → the same counts, the other way round. */
  private readonly routersByGroup = new Map<string, Map<Uuid, number>>();
  /** The component of every datapath that has a link. */
  private readonly componentOf = new Map<Uuid, Component>();
  private readonly refs = new Map<string, readonly Uuid[]>();
  /** Ends of the links added or removed since the last settle; whether one was removed. */
  private readonly dirtyDps = new Set<Uuid>();
  private readonly addedLinks: (readonly [Uuid, Uuid])[] = [];
  private linkRemoved = false;
  private readonly dirtyGroups = new Set<string>();

  /** The group's ref_chassis as last settled (sorted). */
  refOf(group: string): readonly Uuid[] {
    return this.refs.get(group) ?? NO_REFS;
  }

  /** Marks a group whose rows were written (its members may have changed in number). */
  touchGroup(group: string): void {
    this.dirtyGroups.add(group);
  }

  /** Records what port `name` contributes now (undefined: it is not bound). */
  setPort(name: string, c: RefContribution | undefined): void {
    const old = this.contributions.get(name);
    if (old === undefined && c === undefined) return;
    if (old !== undefined && c !== undefined && sameData(old, c)) return;
    if (c === undefined) this.contributions.delete(name);
    else this.contributions.set(name, c);
    if (!sameData(old?.bound, c?.bound)) {
      if (old?.bound !== undefined) this.bound(old.bound, -1);
      if (c?.bound !== undefined) this.bound(c.bound, 1);
    }
    if (!sameData(old?.link, c?.link)) {
      if (old?.link !== undefined) this.link(old.link, -1);
      if (c?.link !== undefined) this.link(c.link, 1);
    }
    if (!sameData(old?.crGroup, c?.crGroup)) {
      if (old?.crGroup !== undefined) this.crGroup(old.crGroup, -1);
      if (c?.crGroup !== undefined) this.crGroup(c.crGroup, 1);
    }
  }

  /**
   * Brings components and the dirty groups' ref_chassis up to date. `memberCount` gives a
   * group's HA_Chassis count, undefined when the group is gone. Returns the groups whose
   * ref_chassis changed (existing groups only), in name order.
   */
  settle(memberCount: (group: string) => number | undefined): string[] {
    if (this.linkRemoved) this.rebuildComponents();
    else for (const [a, b] of this.addedLinks) this.merge(a, b);
    this.dirtyDps.clear();
    this.addedLinks.length = 0;
    this.linkRemoved = false;
    const changed: string[] = [];
    for (const group of [...this.dirtyGroups].sort()) {
      const members = memberCount(group);
      if (members === undefined) {
        this.refs.delete(group);
        continue;
      }
      const now = members > 1 ? this.compute(group) : NO_REFS;
      if (sameData(now, this.refOf(group))) continue;
      if (now.length === 0) this.refs.delete(group);
      else this.refs.set(group, now);
      changed.push(group);
    }
    this.dirtyGroups.clear();
    return changed;
  }

  private compute(group: string): readonly Uuid[] {
    const chassis = new Set<Uuid>();
    const seen = new Set<Component>();
    for (const router of this.routersByGroup.get(group)?.keys() ?? []) {
      const comp = this.componentOf.get(router);
      if (comp === undefined || seen.has(comp)) continue;
      seen.add(comp);
      for (const c of comp.chassis.keys()) chassis.add(c);
    }
    return chassis.size === 0 ? NO_REFS : [...chassis].sort();
  }

  private bound([dp, chassis]: readonly [Uuid, Uuid], by: number): void {
    bumpIn(this.boundBySwitch, dp, chassis, by);
    const comp = this.componentOf.get(dp);
    if (comp === undefined) return;
    const n = bump(comp.chassis, chassis, by);
    // The component gained its first port on this chassis, or lost its last.
    if ((by > 0 && n === 1) || (by < 0 && n === 0)) for (const g of comp.groups.keys()) this.dirtyGroups.add(g);
  }

  private link([a, b]: readonly [Uuid, Uuid], by: number): void {
    bumpIn(this.links, a, b, by);
    if (a !== b) bumpIn(this.links, b, a, by);
    this.dirtyDps.add(a).add(b);
    if (by > 0) this.addedLinks.push([a, b]);
    else this.linkRemoved = true;
  }

  /** The component of `dp`, made for it alone when it has none yet. */
  private componentFor(dp: Uuid): Component {
    let comp = this.componentOf.get(dp);
    if (comp !== undefined) return comp;
    comp = { dps: new Set([dp]), chassis: new Map(this.boundBySwitch.get(dp)), groups: new Map(this.groupsByRouter.get(dp)) };
    this.componentOf.set(dp, comp);
    // Its groups now see its own chassis (what merge does not mark when a datapath is linked to itself).
    for (const g of comp.groups.keys()) this.dirtyGroups.add(g);
    return comp;
  }

  /** A link added between `a` and `b`: their components become one (the smaller moves). */
  private merge(a: Uuid, b: Uuid): void {
    const ca = this.componentFor(a);
    const cb = this.componentFor(b);
    if (ca === cb) return;
    const [big, small] = ca.dps.size >= cb.dps.size ? [ca, cb] : [cb, ca];
    for (const dp of small.dps) {
      big.dps.add(dp);
      this.componentOf.set(dp, big);
    }
    for (const [c, n] of small.chassis) bump(big.chassis, c, n);
    for (const [g, n] of small.groups) bump(big.groups, g, n);
    for (const g of big.groups.keys()) this.dirtyGroups.add(g);
  }

  private crGroup([router, group]: readonly [Uuid, string], by: number): void {
    bumpIn(this.groupsByRouter, router, group, by);
    bumpIn(this.routersByGroup, group, router, by);
    const comp = this.componentOf.get(router);
    if (comp !== undefined) bump(comp.groups, group, by);
    this.dirtyGroups.add(group);
  }

  /**
   * Walks the components of the datapaths whose links changed. Every datapath of a component
   * that lost a link is reached from an end of a changed link, so old components are replaced
   * whole (asserted).
   */
  private rebuildComponents(): void {
    const visited = new Set<Uuid>();
    const retired = new Set<Component>();
    for (const start of [...this.dirtyDps].sort()) {
      if (visited.has(start)) continue;
      const old = this.componentOf.get(start);
      if (old !== undefined) retired.add(old);
      if (!this.links.has(start)) {
        visited.add(start);
        this.componentOf.delete(start);
        continue;
      }
      const comp: Component = { dps: new Set(), chassis: new Map(), groups: new Map() };
      const queue: Uuid[] = [start];
      visited.add(start);
      for (let i = 0; i < queue.length; i++) {
        const dp = queue[i] as Uuid;
        const before = this.componentOf.get(dp);
        if (before !== undefined) retired.add(before);
        this.componentOf.set(dp, comp);
        comp.dps.add(dp);
        for (const [c, n] of this.boundBySwitch.get(dp) ?? []) bump(comp.chassis, c, n);
        for (const [g, n] of this.groupsByRouter.get(dp) ?? []) bump(comp.groups, g, n);
        for (const next of this.links.get(dp)?.keys() ?? []) {
          if (visited.has(next)) continue;
          visited.add(next);
          queue.push(next);
        }
      }
      for (const g of comp.groups.keys()) this.dirtyGroups.add(g);
    }
    for (const comp of retired) {
      for (const dp of comp.dps) assert.ok(visited.has(dp), 'ref_chassis: a component was rebuilt in part');
      for (const g of comp.groups.keys()) this.dirtyGroups.add(g);
    }
  }
}
