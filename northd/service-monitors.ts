// Load balancer health checks (ovn-northd 23.03's build_lb_svcs, ovn_lb_svc_create): the SB
// Service_Monitor rows, and per load balancer what its flows read of them.
//
// A VIP is health checked when its load balancer names a Load_Balancer_Health_Check whose vip
// is the VIP's key as written (the first such row by UUID) and is neither SCTP nor a template. Each backend of such a VIP is looked up in ip_port_mappings ("IP" or "[IP6]",
// as inet_ntop prints it) as "logical_port:source_ip" (split at the first ':'; the source IP
// as OVS's inet_parse_address reads it, brackets allowed). A backend whose port is an enabled
// switch port and whose source IP parses is monitored: one Service_Monitor row per (ip, port,
// protocol, logical_port), shared by every VIP naming it, with src_mac = svc_monitor_mac,
// src_ip, and options copied from the health check. A row no VIP needs is deleted.
//
// status is the chassis's (ovn-controller's pinctrl probes write it; this node never invents
// one). It reaches the engine through the `svc_status` source (Service_Monitor UUID → status)
// and shows in the row, except that "online" shows as "offline" while the monitored port's
// Port_Binding is not up: ovn-northd 23.03 writes that correction into the SB itself; here it
// is a function of the report and the binding, so it needs no write and no history.
//
// What the flows read (`LbHealth`): per health-checked VIP the backends ct_lb_mark may choose
// (monitored, and the row's status unset or "online": an unmonitored backend of such a VIP is
// never chosen), and the ARP/ND responder entries for the source IPs (every mapped backend on a
// switch port, enabled or not) with svc_monitor_mac.
//
// Several VIPs may monitor one backend with different options or source IPs: ovn-northd keeps
// whatever the last load balancer in its hash table wrote. Here the lowest load balancer UUID,
// then its first VIP by key, wins, so every replica agrees.
//
// Incremental: a load balancer's spec is read again when its row, one of its health checks, a
// switch port its mappings name, or the svc_monitor_mac changes; a row is written again when
// its users, the status reported for it or its port's up change; a load balancer's health is
// derived again when its spec or one of its rows' status changed, and reported only when it
// differs.
import assert from 'node:assert/strict';
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import { formatIpv6, parseIpv6Groups } from './addresses.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import type { LbBackend } from './load-balancers.js';
import { parseStrictIpv4, parseVip } from './load-balancers.js';
import { boolOption, nbGet, nbRows } from './nb.js';
import type { PortsChange, PortsData, SbOwnedChange, SbOwnedData } from './ports.js';
import { sameData } from './same-data.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';
import { svcMonitorMacOf } from './sb-global.js';
import { addTo, removeFrom } from './static-mac-bindings.js';

/** The svc_status source: Service_Monitor UUID → the status a chassis reported for the row. */
export type SvcStatusData = ReadonlyMap<Uuid, string>;
/** A change of the svc_status source: the Service_Monitor UUIDs whose report changed. */
export type SvcStatusChange = ReadonlySet<Uuid>;

/** An ARP/ND responder entry for a monitor's source IP, in the switch of the monitored port. */
export interface SvcArp {
  /** The switch's Datapath_Binding UUID. */
  readonly dp: Uuid;
  readonly srcIp: string;
  /** The VIP is IPv6: answer Neighbor Solicitations rather than ARP requests. */
  readonly v6: boolean;
}

/** What a load balancer's flows read of its health checks. */
export interface LbHealth {
  /** VIP key (as written) → the backends ct_lb_mark may choose, for each health-checked VIP. */
  readonly active: ReadonlyMap<string, readonly LbBackend[]>;
  readonly arp: readonly SvcArp[];
  /** svc_monitor_mac, when there are ARP entries ('' otherwise). */
  readonly mac: string;
}

export interface BackendSpec {
  readonly ip: string;
  readonly port: number;
  /** The mapping's logical port and source IP (undefined: no mapping, or it does not parse). */
  readonly portName: string | undefined;
  readonly srcIp: string | undefined;
}

export interface VipSpec {
  readonly key: string;
  readonly v6: boolean;
  readonly options: ReadonlyMap<string, string>;
  readonly backends: readonly BackendSpec[];
}

/** What the NB says about a load balancer's health checks. */
export interface LbSpec {
  readonly protocol: 'tcp' | 'udp';
  /** Its VIPs with a health check, by key. */
  readonly vips: readonly VipSpec[];
  /** Its health_check column (a health check row's edit reaches it through these). */
  readonly healthChecks: readonly Uuid[];
}

/** One row a load balancer needs, as it would write it. */
export interface MonitorSpec {
  readonly uuid: Uuid;
  readonly ip: string;
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
  readonly logicalPort: string;
  readonly srcIp: string;
  readonly options: ReadonlyMap<string, string>;
}

/** A load balancer with health checks; `health` is what its facts (load-balancers.ts) take in. */
export interface LbSvc {
  readonly spec: LbSpec;
  /** The rows it needs, in VIP and backend order. */
  readonly monitors: readonly MonitorSpec[];
  /** The ports its mappings name. */
  readonly ports: readonly string[];
  health: LbHealth;
}

export interface SvcMonitorsData {
  /** Load balancers with health checks, by NB UUID. */
  readonly lbs: Map<Uuid, LbSvc>;
  /** Health check row → the load balancers naming it. */
  readonly healthCheckUsers: Map<Uuid, Set<Uuid>>;
  /** Logical port → the load balancers whose mappings name it. */
  readonly portUsers: Map<string, Set<Uuid>>;
  /** Service_Monitor UUID → the load balancers needing it. */
  readonly monitorUsers: Map<Uuid, Set<Uuid>>;
  /** Logical port → the Service_Monitor rows monitoring it. */
  readonly monitorsOfPort: Map<string, Set<Uuid>>;
  /** svc_monitor_mac as last read. */
  mac: string;
  readonly table: SbTable;
}

export interface SvcMonitorsChange {
  readonly sb: SbChangeSet;
  /** Load balancers whose health (LbHealth) changed, appeared or went. */
  readonly lbs: Set<Uuid>;
}

/** The Service_Monitor row of a monitored backend: a function of the row's identity. */
export function serviceMonitorUuid(ip: string, port: number, protocol: string, logicalPort: string): Uuid {
  return hashUuid(['Service_Monitor', ip, String(port), protocol, logicalPort]);
}

/**
 * A health check source IP as inet_parse_address reads it (brackets allowed), printed without
 * brackets; undefined when it does not parse. A scoped IPv6 address ("%eth0") is refused: what
 * OVS prints for it depends on the host's interfaces.
 */
export function parseSourceIp(text: string): string | undefined {
  let host = text;
  if (host.startsWith('[')) host = host.endsWith(']') ? host.slice(1, -1) : host.slice(1);
  if (!host.includes(':')) return parseStrictIpv4(host);
  const groups = parseIpv6Groups(host);
  return groups === undefined ? undefined : formatIpv6(groups);
}

function mappingOf(lb: nb.Load_Balancer, ip: string, v6: boolean): { portName: string | undefined; srcIp: string | undefined } {
  const s = lb.ip_port_mappings.get(v6 ? `[${ip}]` : ip);
  const colon = s === undefined ? -1 : s.indexOf(':');
  if (s === undefined || colon < 0) return { portName: undefined, srcIp: undefined };
  return { portName: s.slice(0, colon), srcIp: parseSourceIp(s.slice(colon + 1)) };
}

/** A load balancer's health check spec from the NB, or undefined when it names no health check. */
function lbSpecOf(db: Database, lb: nb.Load_Balancer): LbSpec | undefined {
  if (lb.health_check.length === 0) return undefined;
  const p = lb.protocol[0];
  const vips: VipSpec[] = [];
  if (p !== 'sctp' && !boolOption(lb.options, 'template', false)) {
    const checks = lb.health_check.map((u) => nbGet<nb.Load_Balancer_Health_Check>(db, 'Load_Balancer_Health_Check', u)).filter((h) => h !== undefined);
    for (const [key, value] of [...lb.vips].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const hc = checks.find((h) => h.vip === key);
      const v = hc === undefined ? undefined : parseVip(key, value);
      if (hc === undefined || v === undefined) continue;
      const backends = v.backends.map((b): BackendSpec => ({ ip: b.ip, port: b.port, ...mappingOf(lb, b.ip, v.v6) }));
      vips.push({ key, v6: v.v6, options: hc.options, backends });
    }
  }
  return { protocol: p === 'udp' ? 'udp' : 'tcp', vips, healthChecks: lb.health_check };
}

/** The switch port `name`, when it is one (ovn-northd would crash on a router port here). */
function switchPort(ports: PortsData, name: string | undefined): { readonly dp: Uuid; readonly enabled: boolean } | undefined {
  const p = name === undefined ? undefined : ports.byName.get(name);
  return p?.kind === 'lsp' ? p : undefined;
}

function monitorsOf(spec: LbSpec, ports: PortsData): MonitorSpec[] {
  const out: MonitorSpec[] = [];
  for (const v of spec.vips) {
    for (const b of v.backends) {
      if (b.srcIp === undefined || b.portName === undefined || switchPort(ports, b.portName)?.enabled !== true) continue;
      out.push({
        uuid: serviceMonitorUuid(b.ip, b.port, spec.protocol, b.portName), ip: b.ip, port: b.port, protocol: spec.protocol,
        logicalPort: b.portName, srcIp: b.srcIp, options: v.options,
      });
    }
  }
  return out;
}

/** Whether a port's Port_Binding.up is true (unset reads as false, as northd writes it). */
function portUp(owned: SbOwnedData, port: string): boolean {
  return owned.get(port)?.up?.[0] === true;
}

type Status = sb.Service_Monitor['status'];

const NO_STATUS: Status = Object.freeze([]);
const ONLINE: Status = Object.freeze(['online'] as const);
const OFFLINE: Status = Object.freeze(['offline'] as const);
const ERROR: Status = Object.freeze(['error'] as const);

/** The status a row shows: the chassis's report, "online" corrected to "offline" while the port is down. */
function shownStatus(reported: string | undefined, up: boolean): Status {
  if (reported === undefined) return NO_STATUS;
  assert(reported === 'online' || reported === 'offline' || reported === 'error', `Service_Monitor status "${reported}" is none of the schema's`);
  if (reported === 'online') return up ? ONLINE : OFFLINE;
  return reported === 'offline' ? OFFLINE : ERROR;
}
const NO_IDS: ReadonlyMap<string, string> = new Map();
const NO_HEALTH: LbHealth = Object.freeze({ active: new Map(), arp: [], mac: '' });

/** One run's work: load balancers to read again, rows to write again, health to derive again. */
class Run {
  readonly monitors = new Set<Uuid>();
  readonly health = new Set<Uuid>();

  constructor(
    private readonly db: Database,
    private readonly ports: PortsData,
    private readonly owned: SbOwnedData,
    private readonly status: SvcStatusData,
    private readonly data: SvcMonitorsData,
    private readonly out: SvcMonitorsChange,
  ) {}

  /** Reads load balancer `uuid` again: its spec, the rows it needs and the indexes. */
  lb(uuid: Uuid): void {
    const row = nbGet<nb.Load_Balancer>(this.db, 'Load_Balancer', uuid);
    const spec = row === undefined ? undefined : lbSpecOf(this.db, row);
    const old = this.data.lbs.get(uuid);
    if (old !== undefined) {
      for (const hc of old.spec.healthChecks) removeFrom(this.data.healthCheckUsers, hc, uuid);
      for (const p of old.ports) removeFrom(this.data.portUsers, p, uuid);
      for (const m of old.monitors) {
        removeFrom(this.data.monitorUsers, m.uuid, uuid);
        this.monitors.add(m.uuid);
      }
    }
    if (spec === undefined) {
      this.data.lbs.delete(uuid);
      if (old !== undefined && !sameData(old.health, NO_HEALTH)) this.out.lbs.add(uuid);
      return;
    }
    const monitors = monitorsOf(spec, this.ports);
    const ports = [...new Set(spec.vips.flatMap((v) => v.backends.map((b) => b.portName).filter((n) => n !== undefined)))].sort();
    for (const hc of spec.healthChecks) addTo(this.data.healthCheckUsers, hc, uuid);
    for (const p of ports) addTo(this.data.portUsers, p, uuid);
    for (const m of monitors) {
      addTo(this.data.monitorUsers, m.uuid, uuid);
      this.monitors.add(m.uuid);
    }
    this.data.lbs.set(uuid, { spec, monitors, ports, health: old?.health ?? NO_HEALTH });
    this.health.add(uuid);
  }

  /** Writes row `uuid` again (or deletes it when no load balancer needs it). */
  private monitor(uuid: Uuid): void {
    const old = this.data.table.rows.get(uuid) as sb.Service_Monitor | undefined;
    const users = this.data.monitorUsers.get(uuid);
    let row: sb.Service_Monitor | undefined;
    if (users !== undefined) {
      const first = [...users].sort()[0] as Uuid;
      const m = this.data.lbs.get(first)?.monitors.find((x) => x.uuid === uuid);
      assert(m !== undefined, `Service_Monitor ${uuid}: its user ${first} does not need it`);
      row = versioned<sb.Service_Monitor>({
        _uuid: uuid, _version: '', ip: m.ip, protocol: [m.protocol], port: m.port, logical_port: m.logicalPort, src_mac: this.data.mac, src_ip: m.srcIp,
        status: shownStatus(this.status.get(uuid), portUp(this.owned, m.logicalPort)), options: m.options, external_ids: NO_IDS,
      });
    }
    if (old !== undefined && row === undefined) removeFrom(this.data.monitorsOfPort, old.logical_port, uuid);
    if (row !== undefined && old === undefined) addTo(this.data.monitorsOfPort, row.logical_port, uuid);
    // Its users read its status; users that stopped needing it were read again already.
    if (row !== undefined && (old === undefined || !sameData(old.status, row.status))) for (const lb of users ?? []) this.health.add(lb);
    if (row === undefined) this.data.table.remove(uuid, this.out.sb);
    else this.data.table.put(row, this.out.sb);
  }

  /** The health of `lb` from its spec and its rows as written. */
  private healthOf(svc: LbSvc): LbHealth {
    const active = new Map<string, LbBackend[]>();
    const arp: SvcArp[] = [];
    for (const v of svc.spec.vips) {
      const chosen: LbBackend[] = [];
      for (const b of v.backends) {
        const p = switchPort(this.ports, b.portName);
        if (p === undefined || b.srcIp === undefined) continue;
        arp.push({ dp: p.dp, srcIp: b.srcIp, v6: v.v6 });
        if (!p.enabled) continue;
        const row = this.data.table.rows.get(serviceMonitorUuid(b.ip, b.port, svc.spec.protocol, b.portName as string)) as sb.Service_Monitor | undefined;
        assert(row !== undefined, `load balancer backend ${b.ip}:${b.port} monitored without a Service_Monitor row`);
        const status = row.status[0];
        if (status === undefined || status === 'online') chosen.push({ ip: b.ip, port: b.port, portStr: b.port === 0 ? undefined : String(b.port) });
      }
      active.set(v.key, chosen);
    }
    return { active, arp, mac: arp.length > 0 ? this.data.mac : '' };
  }

  /** Writes the rows and derives the health this run touched. */
  settle(): void {
    for (const uuid of [...this.monitors].sort()) this.monitor(uuid);
    for (const uuid of [...this.health].sort()) {
      const svc = this.data.lbs.get(uuid);
      if (svc === undefined) continue;
      const now = this.healthOf(svc);
      if (sameData(now, svc.health)) continue;
      svc.health = now;
      this.out.lbs.add(uuid);
    }
  }

  /** svc_monitor_mac changed: every row's src_mac and every ARP responder. */
  macChanged(): void {
    for (const uuid of this.data.monitorUsers.keys()) this.monitors.add(uuid);
    for (const uuid of this.data.lbs.keys()) this.health.add(uuid);
  }
}

function runOf(inputs: NodeInputs, data: SvcMonitorsData, out: SvcMonitorsChange): Run {
  return new Run(inputs.data<Database>('nb'), inputs.data<PortsData>('ports'), inputs.data<SbOwnedData>('sb_owned'), inputs.data<SvcStatusData>('svc_status'), data, out);
}

/** Reads svc_monitor_mac; true when it changed. */
function readMac(db: Database, data: SvcMonitorsData): boolean {
  const mac = svcMonitorMacOf(db) ?? '';
  if (mac === data.mac) return false;
  data.mac = mac;
  return true;
}

function isEmpty(c: SvcMonitorsChange): boolean {
  return c.sb.size === 0 && c.lbs.size === 0;
}

export function svcMonitorsNode(): EngineNode<SvcMonitorsData, SvcMonitorsChange> {
  return {
    name: 'svc_monitors',
    inputs: ['nb', 'ports', 'sb_owned', 'svc_status'],
    init: () => ({
      lbs: new Map(), healthCheckUsers: new Map(), portUsers: new Map(), monitorUsers: new Map(), monitorsOfPort: new Map(), mac: '',
      table: new SbTable('Service_Monitor'),
    }),
    newChange: () => ({ sb: new SbChangeSet(), lbs: new Set() }),
    isEmpty,
    recompute(data: SvcMonitorsData, inputs: NodeInputs, out: SvcMonitorsChange): void {
      out.sb.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const run = runOf(inputs, data, out);
      if (readMac(db, data)) run.macChanged();
      // Everything known and everything in the database, through the same steps as a change;
      // rows written before and no longer needed are deleted.
      for (const uuid of [...new Set([...data.lbs.keys(), ...nbRows<nb.Load_Balancer>(db, 'Load_Balancer').keys()])].sort()) run.lb(uuid);
      for (const uuid of data.table.rows.keys()) run.monitors.add(uuid);
      run.settle();
    },
    handlers: {
      nb(data: SvcMonitorsData, change: unknown, inputs: NodeInputs, out: SvcMonitorsChange) {
        const db = inputs.data<Database>('nb');
        const run = runOf(inputs, data, out);
        const lbs = new Set<Uuid>();
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'Load_Balancer') lbs.add(c.uuid);
          else if (c.table === 'Load_Balancer_Health_Check') for (const lb of data.healthCheckUsers.get(c.uuid) ?? []) lbs.add(lb);
          else if (c.table === 'NB_Global' && readMac(db, data)) run.macChanged();
        }
        if (lbs.size === 0 && run.monitors.size === 0 && run.health.size === 0) return 'unchanged';
        for (const uuid of [...lbs].sort()) run.lb(uuid);
        run.settle();
        return isEmpty(out) ? 'unchanged' : 'handled';
      },
      ports(data: SvcMonitorsData, change: unknown, inputs: NodeInputs, out: SvcMonitorsChange) {
        const lbs = new Set<Uuid>();
        for (const [name, { old, new: now }] of (change as PortsChange).ports) {
          // Only whether it is a switch port, where, and whether it is enabled are read.
          if (old?.kind === now?.kind && old?.dp === now?.dp && old?.enabled === now?.enabled) continue;
          for (const lb of data.portUsers.get(name) ?? []) lbs.add(lb);
        }
        if (lbs.size === 0) return 'unchanged';
        const run = runOf(inputs, data, out);
        for (const uuid of [...lbs].sort()) run.lb(uuid);
        run.settle();
        return isEmpty(out) ? 'unchanged' : 'handled';
      },
      sb_owned(data: SvcMonitorsData, change: unknown, inputs: NodeInputs, out: SvcMonitorsChange) {
        // A port's up corrects its rows' "online".
        const run = runOf(inputs, data, out);
        for (const name of change as SbOwnedChange) for (const uuid of data.monitorsOfPort.get(name) ?? []) run.monitors.add(uuid);
        if (run.monitors.size === 0) return 'unchanged';
        run.settle();
        return isEmpty(out) ? 'unchanged' : 'handled';
      },
      svc_status(data: SvcMonitorsData, change: unknown, inputs: NodeInputs, out: SvcMonitorsChange) {
        const run = runOf(inputs, data, out);
        for (const uuid of change as SvcStatusChange) if (data.table.rows.has(uuid)) run.monitors.add(uuid);
        if (run.monitors.size === 0) return 'unchanged';
        run.settle();
        return isEmpty(out) ? 'unchanged' : 'handled';
      },
    },
  };
}
