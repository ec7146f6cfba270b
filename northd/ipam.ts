// IPAM: the addresses ovn-northd chooses for switch ports whose addresses say "dynamic" (also
// "MAC dynamic", "dynamic IPV4", "dynamic IPV6", "dynamic IPV4 IPV6") and writes into the port's
// dynamic_addresses as "MAC [IPV4] [IPV6]" (23.03's build_ipam).
//
// A switch allocates when its other_config has a valid `subnet` (IPv4: the lowest free address
// of the subnet; its first address is kept for a router, its last is never given, and
// `exclude_ips`, the ports' own addresses and the networks of router ports attached to it are
// taken), a valid `ipv6_prefix` (a /64: the EUI-64 address of the port's MAC in it), or, with
// neither key, `mac_only=true`. A MAC is NB_Global options:mac_prefix (three bytes) and a suffix
// tried from the low 24 bits of the port's IPv4 address upwards until no port of any switch
// holds it. The ports of a switch that allocates nothing, and ports whose entries are no longer
// dynamic, lose their dynamic_addresses; a port attached to a router is left as it is.
//
// ovn-northd 23.03 runs this over every switch on each pass, and its own write of the NB sets
// off another pass, until one changes nothing. Here a transaction rechecks only the switches
// whose answer it may change (`Ipam.affected`), pass after pass until one changes nothing, so
// it equals passes over every switch after every transaction (tests/northd/ipam.test.ts); the
// real ovn-northd is compared in tests/server/nb-writes-real-northd.test.ts. A pass differs from
// ovn-northd's where that changes what the passes settle on or saves one: a fixed IPv4 address
// outside the subnet or taken, or one on a switch with no subnet, is replaced (or dropped) at
// once rather than written first, and a fixed IPv6 address outside the prefix likewise; ports
// asking for a fixed address are served before those given the lowest free one; and a fixed
// address free when the port's turn comes but taken by the time its new addresses are chosen
// is not given twice (ovn-northd would): the port keeps what it has.
//
// mac_prefix: when NB_Global has no valid one, ovn-northd draws one at random and writes it
// back. Here it is derived from NB_Global's UUID (as svc_monitor_mac is, northd/sb-global.ts),
// so every replica agrees, and is not written.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import { sortedDifference } from '../ovsdb/datum.js';
import type * as nb from '../ovsdb/rows/nb.js';
import { eui64In, formatIpv6, parseIpv6Groups } from './addresses.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows, ownerOf } from './nb.js';
import { nbGlobalOf } from './sb-global.js';
import type { DynamicEntry, LportAddresses } from './netaddr.js';
import { extractLrpNetworks, extractLspAddresses, ipv4Mask, ipv4Text, ipv4Value, parseDynamicEntry, parseIpv6Masked, parseMac } from './netaddr.js';

/** One port's new dynamic_addresses (undefined: cleared). */
export interface DynamicAddressWrite {
  readonly lsp: Uuid;
  readonly dynamicAddresses: string | undefined;
}

/** MAC suffixes run over 1..0xfffffe (ipam_get_unused_mac). */
const MAC_SUFFIXES = 0xfffffe;
const MAC_SUFFIX_SPAN = 0x1000000;

/** The three bytes of the MAC prefix, as a number (the MAC's value divided by 2^24). */
export function macPrefixOf(db: Database): number {
  return prefixFrom(nbGlobalOf(db));
}

function prefixFrom(global: nb.NB_Global | undefined): number {
  const written = global?.options.get('mac_prefix');
  const m = written === undefined ? null : /^([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})/.exec(written);
  if (m !== null) {
    const value = m.slice(1, 4).reduce((n, h) => n * 256 + Number.parseInt(h, 16), 0);
    if (value !== 0) return value;
  }
  // Unicast and locally administered, as eth_addr_random makes it.
  const hex = hashUuid(global === undefined ? ['mac_prefix'] : ['mac_prefix', global._uuid]).slice(0, 6);
  const value = Number.parseInt(hex, 16);
  return ((((value >>> 16) & 0xfe) | 0x02) << 16) | (value & 0xffff);
}

/** The value of a MAC in OVN's form (xx:xx:xx:xx:xx:xx, lowercase, as parseMac gives it). */
function macValue(mac: string): number {
  let value = 0;
  for (let i = 0; i < 17; i += 3) value = value * 256 + hexDigit(mac.charCodeAt(i)) * 16 + hexDigit(mac.charCodeAt(i + 1));
  return value;
}

function hexDigit(code: number): number {
  return code <= 0x39 ? code - 0x30 : code - 0x57;
}

function macText(value: number): string {
  return value.toString(16).padStart(12, '0').replace(/(..)(?!$)/g, '$1:');
}

/** The IPv4 pool of a switch's `subnet` (ip_parse_masked, then init_ipam_ipv4's bounds). */
interface Subnet {
  /** The first address after the network's own (kept for a router). */
  readonly start: number;
  /** Addresses from `start` through the broadcast address. */
  readonly total: number;
}

interface SwitchConfig {
  readonly subnet: Subnet | undefined;
  readonly excludeIps: string | undefined;
  /** The /64 prefix, eight groups with the last four zero. */
  readonly prefix6: readonly number[] | undefined;
  readonly macOnly: boolean;
}

/** What other_config asks of IPAM, or undefined when the switch allocates nothing. */
function switchConfig(ls: nb.Logical_Switch): SwitchConfig | undefined {
  const oc = ls.other_config;
  const subnetText = oc.get('subnet');
  const prefixText = oc.get('ipv6_prefix');
  const subnet = subnetText === undefined ? undefined : parseSubnet(subnetText);
  const prefix6 = prefixText === undefined ? undefined : parsePrefix6(prefixText);
  const macOnly = subnetText === undefined && prefixText === undefined && oc.get('mac_only') === 'true';
  if (subnet === undefined && prefix6 === undefined && !macOnly) return undefined;
  return { subnet, excludeIps: oc.get('exclude_ips'), prefix6, macOnly };
}

/** Whether other_config holds anything IPAM reads. */
function configText(ls: nb.Logical_Switch): string {
  const oc = ls.other_config;
  return ['subnet', 'exclude_ips', 'ipv6_prefix', 'mac_only'].map((k) => oc.get(k) ?? '\u0000').join('\u0001');
}

function parseSubnet(text: string): Subnet | undefined {
  const slash = text.indexOf('/');
  // A bare address has an all-ones mask: no pool.
  if (slash < 0) return undefined;
  const ip = ipv4Value(text.slice(0, slash));
  if (ip === undefined) return undefined;
  const m = text.slice(slash + 1);
  let mask: number | undefined;
  if (/^\d{1,2}$/.test(m)) mask = Number(m) <= 32 ? ipv4Mask(Number(m)) : undefined;
  else {
    mask = ipv4Value(m);
    const hostBits = mask === undefined ? 0 : ~mask >>> 0;
    if ((hostBits & (hostBits + 1)) !== 0) mask = undefined;
  }
  if (mask === undefined || mask === 0xffffffff) return undefined;
  return { start: ((ip & mask) >>> 0) + 1, total: ~mask >>> 0 };
}

function parsePrefix6(text: string): number[] | undefined {
  let addr: number[] | undefined;
  if (text.includes('/')) {
    const masked = parseIpv6Masked(text);
    if (masked === undefined || leadingOnes(masked.mask) !== 64) return undefined;
    addr = masked.addr;
  } else addr = parseIpv6Groups(text);
  return addr === undefined ? undefined : [addr[0] as number, addr[1] as number, addr[2] as number, addr[3] as number, 0, 0, 0, 0];
}

function leadingOnes(groups: readonly number[]): number {
  let n = 0;
  for (const g of groups) {
    if (g === 0xffff) n += 16;
    else {
      for (let bit = 15; bit >= 0 && ((g >> bit) & 1) === 1; bit--) n++;
      break;
    }
  }
  return n;
}

/**
 * exclude_ips: addresses and ranges "A..B" separated by white space, clamped to the subnet;
 * reading stops at the first token that is no address, and a range outside the subnet is
 * passed over (as ovn-northd's lexer loop does). Sorted, as [from, to) pairs.
 */
function excludedRanges(text: string | undefined, subnet: Subnet): [number, number][] {
  const ranges: [number, number][] = [];
  if (text === undefined) return ranges;
  const address = /\s*(\d+\.\d+\.\d+\.\d+)/y;
  const ellipsis = /\s*\.\./y;
  let at = 0;
  const next = (): number | undefined => {
    address.lastIndex = at;
    const m = address.exec(text);
    const v = m === null ? undefined : ipv4Value(m[1] as string);
    if (v !== undefined) at = address.lastIndex;
    return v;
  };
  const end = subnet.start + subnet.total;
  while (!/^\s*$/.test(text.slice(at))) {
    const from = next();
    if (from === undefined) break;
    let to = from + 1;
    ellipsis.lastIndex = at;
    if (ellipsis.test(text)) {
      at = ellipsis.lastIndex;
      const last = next();
      if (last === undefined) break;
      to = last + 1;
    }
    const lo = Math.max(subnet.start, from);
    const hi = Math.min(end, to);
    if (hi > lo) ranges.push([lo, hi]);
  }
  return ranges.sort((a, b) => a[0] - b[0]);
}

/** The IPv4 addresses of one switch's subnet that are taken. */
class Pool {
  private readonly used = new Set<number>();
  private readonly excluded: readonly [number, number][];

  constructor(
    readonly subnet: Subnet,
    excludeIps: string | undefined,
  ) {
    this.used.add(subnet.start);
    this.excluded = excludedRanges(excludeIps, subnet);
  }

  /** Whether `ip` may be given: inside the subnet, not its last address, not taken. */
  free(ip: number): boolean {
    const { start, total } = this.subnet;
    if (ip < start || ip - start >= total - 1 || this.used.has(ip)) return false;
    return !this.excluded.some(([lo, hi]) => ip >= lo && ip < hi);
  }

  take(ip: number): void {
    if (ip >= this.subnet.start && ip - this.subnet.start < this.subnet.total) this.used.add(ip);
  }

  release(ip: number): void {
    if (ip !== this.subnet.start) this.used.delete(ip);
  }

  /** The lowest free address (ipam_get_unused_ip), or undefined when the subnet is exhausted. */
  lowestFree(): number | undefined {
    const last = this.subnet.start + this.subnet.total - 1;
    // Each step passes a taken address or an excluded range: bounded by their number.
    for (let ip = this.subnet.start; ip < last; ) {
      const range = this.excluded.find(([lo, hi]) => ip >= lo && ip < hi);
      if (range !== undefined) ip = range[1];
      else if (this.used.has(ip)) ip++;
      else return ip;
    }
    return undefined;
  }
}

/** A dynamic_addresses value, parsed as extract_lsp_addresses reads it (its first addresses). */
interface Current {
  readonly mac: number;
  readonly ipv4: number | undefined;
  readonly ipv6: readonly number[] | undefined;
}

function parseCurrent(text: string | undefined): Current | undefined {
  const parsed = text === undefined ? undefined : extractLspAddresses(text);
  return parsed === undefined ? undefined : { mac: macValue(parsed.ea), ipv4: parsed.ipv4[0]?.addr, ipv6: parsed.ipv6[0]?.addr };
}

/** What IPAM reads of a switch port row, parsed once per row (rows are never changed in place). */
interface PortFacts {
  /** The first dynamic entry of its addresses. */
  readonly entry: DynamicEntry | undefined;
  /** The IPv4 addresses of its static entries. */
  readonly staticIpv4: readonly number[];
  /** The MACs of its static entries and of its dynamic_addresses (macam's inputs). */
  readonly macs: readonly number[];
  /** Its dynamic_addresses. */
  readonly current: Current | undefined;
}

function portFacts(lsp: nb.Logical_Switch_Port): PortFacts {
  let entry: DynamicEntry | undefined;
  const staticIpv4: number[] = [];
  const macs: number[] = [];
  for (const a of lsp.addresses) {
    if (a === 'unknown' || a === 'router') continue;
    const dynamic = parseDynamicEntry(a);
    if (dynamic !== undefined) {
      entry ??= dynamic;
      continue;
    }
    const parsed = extractLspAddresses(a);
    if (parsed === undefined) continue;
    macs.push(macValue(parsed.ea));
    for (const ip of parsed.ipv4) staticIpv4.push(ip.addr);
  }
  const current = parseCurrent(lsp.dynamic_addresses[0]);
  if (current !== undefined) macs.push(current.mac);
  return { entry, staticIpv4, macs, current };
}

function lrpMac(lrp: nb.Logical_Router_Port, out: number[]): void {
  const mac = parseMac(lrp.mac.trim());
  if (mac !== undefined) out.push(macValue(mac));
}

/** The router port a router-type switch port is attached to (its "peer"), if it exists and parses. */
function attachedRouterPort(db: Database, lsp: nb.Logical_Switch_Port): LportAddresses | undefined {
  if (lsp.type !== 'router') return undefined;
  const name = lsp.options.get('router-port');
  const lrp = name === undefined ? undefined : (db.findUnique('Logical_Router_Port', ['name'], [name]) as unknown as nb.Logical_Router_Port | undefined);
  return lrp === undefined ? undefined : extractLrpNetworks(lrp.mac, lrp.networks);
}

const LSP_COLUMNS_READ: ReadonlySet<string> = new Set(['addresses', 'dynamic_addresses', 'type', 'options']);
const LRP_COLUMNS_READ: ReadonlySet<string> = new Set(['name', 'mac', 'networks']);

type Decision = 'none' | 'static' | 'dynamic' | 'remove';

/** A port whose dynamic_addresses may change, as the first phase left it for the second. */
interface Pending {
  readonly lsp: nb.Logical_Switch_Port;
  /** Its dynamic_addresses as the pass found them. */
  readonly currentText: string | undefined;
  readonly pool: Pool | undefined;
  readonly config: SwitchConfig;
  readonly entry: DynamicEntry;
  readonly current: Current | undefined;
  readonly mac: Decision;
  readonly ipv4: Decision;
  readonly ipv6: Decision;
}

/**
 * The allocator, with two indexes derived from the NB alone (so equal on every replica, and
 * rebuilt rather than stored in snapshots): every MAC some port holds, with its count, and the
 * switches that allocate. Each is built when first needed and then kept by `observe`, which
 * must see every NB change, in order, after it is made.
 */
export class Ipam {
  private macs: Map<number, number> | undefined;
  private allocating: Set<Uuid> | undefined;
  /**
   * Each port row's facts, parsed when first read: a recheck of a switch of thousands of ports
   * reads every one, and all but the changed ones are the rows it read last time.
   */
  private readonly facts = new WeakMap<nb.Logical_Switch_Port, PortFacts>();

  private factsOf(lsp: nb.Logical_Switch_Port): PortFacts {
    let f = this.facts.get(lsp);
    if (f === undefined) this.facts.set(lsp, (f = portFacts(lsp)));
    return f;
  }

  /** The NB was replaced (a snapshot restored): the indexes are rebuilt when next needed. */
  reset(): void {
    this.macs = undefined;
    this.allocating = undefined;
  }

  observe(delta: DbDelta): void {
    const macs = this.macs;
    const allocating = this.allocating;
    if (macs === undefined && allocating === undefined) return;
    const scratch: number[] = [];
    for (const c of delta.changes) {
      if (c.table === 'Logical_Switch' && allocating !== undefined) {
        if (c.kind !== 'delete' && switchConfig(c.new as unknown as nb.Logical_Switch) !== undefined) allocating.add(c.uuid);
        else allocating.delete(c.uuid);
        continue;
      }
      if (macs === undefined) continue;
      const lsp = c.table === 'Logical_Switch_Port';
      if (!lsp && c.table !== 'Logical_Router_Port') continue;
      if (c.kind === 'modify' && !c.columns.some((col) => col === 'addresses' || col === 'dynamic_addresses' || col === 'mac')) continue;
      const read = lsp ? (r: unknown, out: number[]) => out.push(...this.factsOf(r as nb.Logical_Switch_Port).macs) : (r: unknown, out: number[]) => lrpMac(r as nb.Logical_Router_Port, out);
      if (c.kind !== 'insert') {
        scratch.length = 0;
        read(c.old, scratch);
        for (const m of scratch) countMac(macs, m, -1);
      }
      if (c.kind !== 'delete') {
        scratch.length = 0;
        read(c.new, scratch);
        for (const m of scratch) countMac(macs, m, 1);
      }
    }
  }

  /**
   * After `delta` was applied to `db` (and observed): the dynamic_addresses writes that make
   * every switch it may concern right (at most one per port).
   */
  writes(db: Database, delta: DbDelta): DynamicAddressWrite[] {
    const switches = this.affected(db, delta);
    return switches.size === 0 ? [] : this.allocate(db, [...switches].sort());
  }

  /**
   * A pass over every switch: what ovn-northd's build_ipam would write now. On a new Ipam (its
   * MAC index built from `db`), the reference the tests hold `writes` to.
   */
  recompute(db: Database): DynamicAddressWrite[] {
    return this.allocate(db, [...nbRows<nb.Logical_Switch>(db, 'Logical_Switch').keys()].sort());
  }

  /** The switches whose allocation `delta` may change. */
  private affected(db: Database, delta: DbDelta): Set<Uuid> {
    const out = new Set<Uuid>();
    const routerPorts = new Set<string>();
    let prefixMoved = false;
    for (const c of delta.changes) {
      switch (c.table) {
        case 'NB_Global': {
          const before = c.kind === 'insert' ? undefined : (c.old as unknown as nb.NB_Global);
          const after = c.kind === 'delete' ? undefined : (c.new as unknown as nb.NB_Global);
          const mayMove = before?.options.get('mac_prefix') !== after?.options.get('mac_prefix') || before?._uuid !== after?._uuid;
          if (mayMove && prefixFrom(before) !== prefixFrom(after)) prefixMoved = true;
          break;
        }
        case 'Logical_Switch': {
          if (c.kind === 'delete') break;
          const ls = c.new as unknown as nb.Logical_Switch;
          if (c.kind === 'insert') {
            if (switchConfig(ls) !== undefined || ls.ports.some((p) => holdsDynamic(db, p))) out.add(c.uuid);
            break;
          }
          const old = c.old as unknown as nb.Logical_Switch;
          const portsMoved = c.columns.includes('ports');
          if (!portsMoved && configText(old) === configText(ls)) break;
          if (switchConfig(ls) !== undefined || switchConfig(old) !== undefined) out.add(c.uuid);
          // A switch that allocates nothing clears what ports joining it bring along.
          else if (portsMoved && sortedDifference(old.ports, ls.ports).added.some((p) => holdsDynamic(db, p))) out.add(c.uuid);
          break;
        }
        case 'Logical_Switch_Port': {
          // A port inserted or deleted comes with its switch's change of `ports`.
          if (c.kind !== 'modify' || !c.columns.some((col) => LSP_COLUMNS_READ.has(col))) break;
          const owner = ownerOf(db, 'Logical_Switch', c.uuid);
          const ls = owner === undefined ? undefined : nbGet<nb.Logical_Switch>(db, 'Logical_Switch', owner);
          if (ls !== undefined && (switchConfig(ls) !== undefined || (c.new as unknown as nb.Logical_Switch_Port).dynamic_addresses.length > 0)) out.add(ls._uuid);
          break;
        }
        case 'Logical_Router_Port': {
          if (c.kind === 'modify' && !c.columns.some((col) => LRP_COLUMNS_READ.has(col))) break;
          if (c.kind !== 'insert') routerPorts.add((c.old as unknown as nb.Logical_Router_Port).name);
          if (c.kind !== 'delete') routerPorts.add((c.new as unknown as nb.Logical_Router_Port).name);
          break;
        }
      }
    }
    if (!prefixMoved && routerPorts.size === 0) return out;
    for (const uuid of this.allocatingSwitches(db)) {
      if (out.has(uuid)) continue;
      const ls = nbGet<nb.Logical_Switch>(db, 'Logical_Switch', uuid) as nb.Logical_Switch;
      if (prefixMoved || ls.ports.some((p) => facesRouterPort(db, p, routerPorts))) out.add(uuid);
    }
    return out;
  }

  private allocatingSwitches(db: Database): ReadonlySet<Uuid> {
    if (this.allocating === undefined) {
      this.allocating = new Set();
      for (const ls of nbRows<nb.Logical_Switch>(db, 'Logical_Switch').values()) if (switchConfig(ls) !== undefined) this.allocating.add(ls._uuid);
    }
    return this.allocating;
  }

  private macIndex(db: Database): Map<number, number> {
    if (this.macs === undefined) {
      const macs = new Map<number, number>();
      const scratch: number[] = [];
      for (const lsp of nbRows<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port').values()) scratch.push(...this.factsOf(lsp).macs);
      for (const lrp of nbRows<nb.Logical_Router_Port>(db, 'Logical_Router_Port').values()) lrpMac(lrp, scratch);
      for (const m of scratch) countMac(macs, m, 1);
      this.macs = macs;
    }
    return this.macs;
  }

  /**
   * build_ipam over `switches`, pass after pass until a pass changes nothing, as ovn-northd
   * does in effect (its write of the NB sets off its next pass). A pass rarely leaves work for
   * another: a port that moves off an IPv4 address leaves it free for a port given the lowest
   * free one. A pass that moved no port off an address cannot: the next would find what this
   * one wrote, and is not run (most transactions take one pass). The passes read their
   * predecessors' writes from `written`.
   */
  private allocate(db: Database, switches: readonly Uuid[]): DynamicAddressWrite[] {
    const prefix = macPrefixOf(db);
    const written = new Map<Uuid, string | undefined>();
    // What `written` holds of MACs beyond the index (which sees them only once committed).
    const macDelta = new Map<number, number>();
    for (let pass = 0; pass < PASSES_MAX; pass++) {
      const { writes, released } = this.pass(db, switches, prefix, written, macDelta);
      for (const w of writes) {
        const before = written.has(w.lsp) ? written.get(w.lsp) : nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', w.lsp)?.dynamic_addresses[0];
        countMac(macDelta, parseCurrent(before)?.mac, -1);
        countMac(macDelta, parseCurrent(w.dynamicAddresses)?.mac, 1);
        written.set(w.lsp, w.dynamicAddresses);
      }
      if (!released) break;
    }
    const out: DynamicAddressWrite[] = [];
    for (const [lsp, value] of written) {
      if (value !== nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', lsp)?.dynamic_addresses[0]) out.push({ lsp, dynamicAddresses: value });
    }
    return out;
  }

  /**
   * One pass (build_ipam): first every switch's ports that keep what they have (their
   * addresses taken), then the ports that get something new, in order.
   */
  private pass(db: Database, switches: readonly Uuid[], prefix: number, written: ReadonlyMap<Uuid, string | undefined>, macDelta: ReadonlyMap<number, number>): { writes: DynamicAddressWrite[]; released: boolean } {
    const writes: DynamicAddressWrite[] = [];
    const pending: Pending[] = [];
    let released = false;
    // MACs this pass gives up and takes, over the index and the earlier passes.
    const passDelta = new Map<number, number>();
    const currentOf = (lsp: nb.Logical_Switch_Port): string | undefined => (written.has(lsp._uuid) ? written.get(lsp._uuid) : lsp.dynamic_addresses[0]);
    const parsedOf = (lsp: nb.Logical_Switch_Port): Current | undefined => (written.has(lsp._uuid) ? parseCurrent(written.get(lsp._uuid)) : this.factsOf(lsp).current);
    for (const uuid of switches) {
      const ls = nbGet<nb.Logical_Switch>(db, 'Logical_Switch', uuid);
      if (ls === undefined) continue;
      const config = switchConfig(ls);
      const ports = ls.ports.map((p) => nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', p)).filter((p): p is nb.Logical_Switch_Port => p !== undefined);
      const pool = config?.subnet === undefined ? undefined : new Pool(config.subnet, config.excludeIps);
      const attached = new Set<Uuid>();
      for (const lsp of ports) {
        const peer = attachedRouterPort(db, lsp);
        if (peer !== undefined) attached.add(lsp._uuid);
        if (pool === undefined) continue;
        for (const ip of this.factsOf(lsp).staticIpv4) pool.take(ip);
        for (const ip of peer?.ipv4 ?? []) pool.take(ip.addr);
      }
      for (const lsp of ports) {
        // ovn-northd passes over a port attached to a router, whatever it holds.
        if (config !== undefined && attached.has(lsp._uuid)) continue;
        const currentText = currentOf(lsp);
        const entry = config === undefined ? undefined : this.factsOf(lsp).entry;
        if (entry === undefined) {
          if (currentText !== undefined) {
            countMac(passDelta, parsedOf(lsp)?.mac, -1);
            writes.push({ lsp: lsp._uuid, dynamicAddresses: undefined });
          }
          continue;
        }
        const p = decide(lsp, currentText, parsedOf(lsp), entry, config as SwitchConfig, pool, prefix);
        if (p.mac === 'none' && p.ipv4 === 'none' && p.ipv6 === 'none') continue;
        if (p.mac !== 'none') countMac(passDelta, p.current?.mac, -1);
        pending.push(p);
      }
    }
    const taken = (mac: number): boolean => (this.macIndex(db).get(mac) ?? 0) + (macDelta.get(mac) ?? 0) + (passDelta.get(mac) ?? 0) > 0;
    // Ports asking for a fixed address go first, then the ones given the lowest free address:
    // so a port asking for the address another would be given the lowest free gets it, as
    // where ovn-northd's passes settle.
    const asks = (p: Pending): boolean => p.ipv4 === 'static' || (p.ipv4 === 'dynamic' && p.entry.ipv4 !== undefined);
    for (const p of [...pending.filter(asks), ...pending.filter((p) => !asks(p))]) {
      const { text, ipv4 } = assign(p, prefix, taken);
      if (p.mac !== 'none') countMac(passDelta, parseCurrent(text)?.mac, 1);
      if (text !== p.currentText) writes.push({ lsp: p.lsp._uuid, dynamicAddresses: text });
      if (p.current?.ipv4 !== undefined && p.current.ipv4 !== ipv4) released = true;
    }
    return { writes, released };
  }
}

/** Passes of build_ipam one transaction may take; in the tests, never more than a few. */
const PASSES_MAX = 16;

function countMac(counts: Map<number, number>, mac: number | undefined, by: number): void {
  if (mac === undefined) return;
  const n = (counts.get(mac) ?? 0) + by;
  if (n === 0) counts.delete(mac);
  else counts.set(mac, n);
}

function holdsDynamic(db: Database, lspUuid: Uuid): boolean {
  return (nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', lspUuid)?.dynamic_addresses.length ?? 0) > 0;
}

function facesRouterPort(db: Database, lspUuid: Uuid, names: ReadonlySet<string>): boolean {
  const lsp = nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', lspUuid);
  const name = lsp?.type === 'router' ? lsp.options.get('router-port') : undefined;
  return name !== undefined && names.has(name);
}

/**
 * The first phase for one port: what of its current dynamic_addresses stays (taken in the pool
 * at once) and what must be chosen (dynamic_addresses_check_for_updates, or for a port with
 * none yet, set_dynamic_updates).
 */
function decide(lsp: nb.Logical_Switch_Port, currentText: string | undefined, current: Current | undefined, entry: DynamicEntry, config: SwitchConfig, pool: Pool | undefined, prefix: number): Pending {
  if (currentText === undefined) {
    return { lsp, currentText, pool, config, entry, current: undefined, mac: entry.mac === undefined ? 'dynamic' : 'static', ipv4: pool === undefined ? 'none' : 'dynamic', ipv6: config.prefix6 === undefined ? 'none' : 'dynamic' };
  }
  const curMac = current?.mac ?? 0;
  const mac: Decision = entry.mac !== undefined ? (current !== undefined && macValue(entry.mac) === curMac ? 'none' : 'static') : Math.floor(curMac / MAC_SUFFIX_SPAN) === prefix ? 'none' : 'dynamic';
  const curIpv4 = current?.ipv4;
  let ipv4: Decision;
  if (pool === undefined) ipv4 = curIpv4 !== undefined ? 'remove' : 'none';
  else if (curIpv4 === undefined || !pool.free(curIpv4)) ipv4 = 'dynamic';
  else if (entry.ipv4 === undefined || entry.ipv4 === curIpv4) {
    pool.take(curIpv4);
    ipv4 = 'none';
  } else if (pool.free(entry.ipv4)) {
    // Asked for another fixed address: tried in the second phase, with this one held till then.
    pool.take(curIpv4);
    ipv4 = 'static';
  } else {
    // One it cannot give: ovn-northd then takes the lowest free address, on every pass.
    ipv4 = 'dynamic';
  }
  const curIpv6 = current?.ipv6;
  let ipv6: Decision = 'none';
  if (config.prefix6 === undefined) ipv6 = curIpv6 !== undefined ? 'remove' : 'none';
  else if (curIpv6 === undefined || entry.mac !== undefined) ipv6 = 'dynamic';
  else if (entry.ipv6 !== undefined) {
    const wanted = fixedIpv6(entry.ipv6, config.prefix6);
    ipv6 = wanted === undefined ? 'dynamic' : sameGroups(wanted, curIpv6) ? 'none' : 'static';
  } else if (mac !== 'none') ipv6 = 'dynamic';
  return { lsp, currentText, pool, config, entry, current, mac, ipv4, ipv6 };
}

/** A fixed IPv6 address when it parses and lies in the prefix (compared as ovn-northd does). */
function fixedIpv6(text: string, prefix: readonly number[]): number[] | undefined {
  const addr = parseIpv6Groups(text);
  if (addr === undefined) return undefined;
  return prefix.every((g, i) => ((addr[i] as number) & g) === g) ? addr : undefined;
}

function sameGroups(a: readonly number[], b: readonly number[]): boolean {
  return a.every((g, i) => g === b[i]);
}

/** The second phase for one port (update_dynamic_addresses): its new dynamic_addresses, and the IPv4 address in it. */
function assign(p: Pending, prefix: number, macTaken: (mac: number) => boolean): { text: string; ipv4: number | undefined } {
  const { pool, entry, current } = p;
  const curIpv4 = current?.ipv4;
  let ipv4: number | undefined;
  // The IPv4 address ovn-northd's one pass gives (a new MAC follows from it, and stays when
  // its next pass moves the address): a new port's fixed one, valid or not; else the lowest
  // free one, where this settles on the fixed one at once.
  let firstPass: number | undefined;
  if (p.ipv4 === 'none') ipv4 = firstPass = current === undefined ? undefined : curIpv4;
  else if (p.ipv4 === 'static') {
    // Held since the first phase; moved only if the address asked for is free.
    ipv4 = curIpv4;
    if (pool !== undefined && entry.ipv4 !== undefined && pool.free(entry.ipv4)) {
      if (curIpv4 !== undefined) pool.release(curIpv4);
      ipv4 = entry.ipv4;
    }
    firstPass = ipv4;
  } else if (p.ipv4 === 'dynamic' && pool !== undefined) {
    const lowest = pool.lowestFree();
    ipv4 = entry.ipv4 !== undefined && pool.free(entry.ipv4) ? entry.ipv4 : lowest;
    firstPass = lowest;
  }
  if (current === undefined && entry.ipv4 !== undefined) firstPass = entry.ipv4;
  if (ipv4 !== undefined && pool !== undefined) pool.take(ipv4);

  let mac: number;
  if (p.mac === 'none') mac = (current as Current).mac;
  else if (p.mac === 'static') mac = macValue(entry.mac as string);
  else {
    const base = (firstPass ?? 0) & 0xffffff;
    mac = prefix * MAC_SUFFIX_SPAN + 1 + (base % MAC_SUFFIXES);
    // Each step passes a MAC some port holds: bounded by their number.
    for (let i = 1; macTaken(mac) && i < MAC_SUFFIXES; i++) mac = prefix * MAC_SUFFIX_SPAN + 1 + ((base + i) % MAC_SUFFIXES);
  }

  let ipv6: readonly number[] | undefined;
  if (p.ipv6 === 'none') ipv6 = current?.ipv6;
  else if (p.ipv6 === 'static') ipv6 = fixedIpv6(entry.ipv6 as string, p.config.prefix6 as number[]);
  else if (p.ipv6 === 'dynamic' && p.config.prefix6 !== undefined) {
    const fixed = entry.ipv6 === undefined ? undefined : fixedIpv6(entry.ipv6, p.config.prefix6);
    ipv6 = fixed ?? eui64In(p.config.prefix6, macText(mac));
  }
  let text = macText(mac);
  if (ipv4 !== undefined) text += ` ${ipv4Text(ipv4)}`;
  if (ipv6 !== undefined) text += ` ${formatIpv6(ipv6)}`;
  return { text, ipv4 };
}
