// Router advertisements sent unasked (ovn-controller 23.03.1's pinctrl: prepare_ipv6_ras,
// ipv6_ra_update_config, ipv6_ra_send). A router port whose binding carries
// options:ipv6_ra_send_periodic=true (ovn-northd's copy of its ipv6_ra_configs) advertises on
// its link: every chassis that sees the binding injects, every min_interval to max_interval
// seconds (a random point between, picked anew each time), an advertisement into the logical
// switch port that peers with the router port, flagged local-only, so that each chassis reaches
// its own VMs on that switch. The advertisement is the one a solicitation gets
// (agent/actions/nd-ra.ts) with the binding's values, sent to all nodes (ff02::1).
//
// `periodicRaSpecs` reads what to advertise from the SB view (pure); `PeriodicRas` keeps the
// schedule, with injected timers and randomness.

import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { encodeNdRa, ndRaOpts } from '../actions/nd-ra.js';
import type { DhcpOption } from '../actions/dhcp.js';
import { LOG_REG, MLF, OFTABLE } from '../compile/tables.js';
import { parseIpv6 } from '../expr/lexer.js';
import { OFPP } from '../openflow/actions.js';
import { OFP_NO_BUFFER, type OfMessage } from '../openflow/messages.js';
import { AnnounceSchedule, type AnnounceOptions, type AnnounceState, type AnnounceStats } from './announce-schedule.js';
import { buildEthernet, buildIcmp6, buildIpv6, ETH_TYPE, IP_PROTO, macToBytes, parseMac } from './packet.js';
import { optionInt } from './svc-monitor-table.js';

const OFPP10_CONTROLLER = 0xfffd;
const ALL_NODES_MAC = '33:33:00:00:00:01';
const ALL_NODES = (0xff02n << 112n) | 1n;
/** ovn-northd's defaults when the binding lacks the intervals (RFC 4861, 6.2.1). */
const MAX_INTERVAL_DEFAULT = 600;

/** What one router port advertises, and where. */
export interface PeriodicRaSpec {
  /** The router port's name. */
  readonly port: string;
  /** The datapath and port keys of the switch port it peers with (the advertisement enters there). */
  readonly dpKey: number;
  readonly portKey: number;
  readonly minIntervalS: number;
  readonly maxIntervalS: number;
  /** The whole Ethernet frame. */
  readonly packet: Buffer;
}

/** What periodicRaSpecs reads of the SB view. */
export interface PeriodicRaLookups {
  table(name: string): ReadonlyMap<string, Row>;
  portByName(name: string): sb.Port_Binding | undefined;
  datapath(uuid: string): sb.Datapath_Binding | undefined;
}

const str = (name: string, value: string): DhcpOption => ({ name, opt: ndRaOpts.get(name) as DhcpOption['opt'], value: { kind: 'string', value } });
const int = (name: string, value: bigint, mask: bigint | null, format: 'ethernet' | 'ipv6' | 'decimal'): DhcpOption =>
  ({ name, opt: ndRaOpts.get(name) as DhcpOption['opt'], value: { kind: 'ints', values: [{ value, mask, format }] } });

/** The prefixes of ipv6_ra_prefixes ("addr/plen ..."), or undefined when one does not parse. */
function prefixes(text: string): { addr: bigint; plen: number }[] | undefined {
  const out: { addr: bigint; plen: number }[] = [];
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(word);
    const addr = m === null ? null : parseIpv6(m[1] as string);
    if (m === null || addr === null || Number(m[2]) > 128) return undefined;
    out.push({ addr, plen: Number(m[2]) });
  }
  return out;
}

const maskOf = (plen: number): bigint => (plen === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - plen)) - 1n));

/**
 * The advertisement of a binding's options (ipv6_ra_update_config and compose_nd_ra), or why
 * there is none: the mode, a source MAC and link-local address are required, prefixes and DNS
 * server must parse.
 */
export function periodicRaPacket(options: ReadonlyMap<string, string>): Buffer | string {
  const mode = options.get('ipv6_ra_address_mode');
  if (mode === undefined) return 'no address mode';
  if (mode !== 'slaac' && mode !== 'dhcpv6_stateful' && mode !== 'dhcpv6_stateless') return `invalid address mode ${mode}`;
  const list = prefixes(options.get('ipv6_ra_prefixes') ?? '');
  if (list === undefined) return `invalid IPv6 prefixes: ${options.get('ipv6_ra_prefixes') ?? ''}`;
  const srcEth = parseMac(options.get('ipv6_ra_src_eth') ?? '');
  if (srcEth === undefined) return `invalid ethernet source ${options.get('ipv6_ra_src_eth') ?? ''}`;
  const srcIp = parseIpv6(options.get('ipv6_ra_src_addr') ?? '');
  if (srcIp === null) return `invalid IP source ${options.get('ipv6_ra_src_addr') ?? ''}`;
  const rdnssText = options.get('ipv6_ra_rdnss');
  const rdnss = rdnssText === undefined ? undefined : parseIpv6(rdnssText);
  if (rdnss === null) return `invalid RDNSS source ${rdnssText ?? ''}`;
  const opts: DhcpOption[] = [str('addr_mode', mode)];
  const prf = options.get('ipv6_ra_prf');
  if (prf === 'HIGH' || prf === 'LOW') opts.push(str('router_preference', prf));
  opts.push(int('slla', BigInt(`0x${macToBytes(srcEth).toString('hex')}`), null, 'ethernet'));
  const mtu = optionInt(options, 'ipv6_ra_mtu', 0);
  if (mtu !== 0) opts.push(int('mtu', BigInt(mtu >>> 0), null, 'decimal'));
  for (const p of list) opts.push(int('prefix', p.addr, maskOf(p.plen), 'ipv6'));
  if (rdnss !== undefined) opts.push(int('rdnss', rdnss, null, 'ipv6'));
  const dnssl = options.get('ipv6_ra_dnssl');
  if (dnssl !== undefined && dnssl !== '') opts.push(str('dnssl', dnssl));
  const routeInfo = options.get('ipv6_ra_route_info');
  if (routeInfo !== undefined && routeInfo !== '') opts.push(str('route_info', routeInfo));
  const ra = Buffer.from(encodeNdRa(opts));
  const icmp = buildIcmp6({ type: ra[0] as number, code: 0 }, ra.subarray(4), srcIp, ALL_NODES);
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 255, src: srcIp, dst: ALL_NODES }, icmp);
  return buildEthernet({ dst: parseMac(ALL_NODES_MAC) as NonNullable<ReturnType<typeof parseMac>>, src: srcEth, ethType: ETH_TYPE.IPV6 }, ip);
}

/** Every router port this chassis advertises for, from its SB view, and the bindings skipped with why. */
export function periodicRaSpecs(s: PeriodicRaLookups, reads?: PeriodicRaInputs): { specs: PeriodicRaSpec[]; skipped: string[] } {
  const specs: PeriodicRaSpec[] = [];
  const skipped: string[] = [];
  const rows: sb.Port_Binding[] = [];
  for (const r of s.table('Port_Binding').values()) {
    const pb = r as unknown as sb.Port_Binding;
    if ((pb.options.get('ipv6_ra_send_periodic') ?? '').toLowerCase() === 'true') rows.push(pb);
  }
  rows.sort((a, b) => (a.logical_port < b.logical_port ? -1 : a.logical_port > b.logical_port ? 1 : 0));
  reads?.clear();
  for (const pb of rows) {
    reads?.read(pb._uuid);
    const peerName = pb.options.get('peer');
    if (peerName !== undefined) reads?.readName(peerName);
    const peer = peerName === undefined ? undefined : s.portByName(peerName);
    if (peer !== undefined) reads?.read(peer._uuid);
    const dp = peer === undefined ? undefined : s.datapath(peer.datapath);
    if (peer === undefined || dp === undefined) continue;
    const packet = periodicRaPacket(pb.options);
    if (typeof packet === 'string') {
      skipped.push(`${pb.logical_port}: ${packet}`);
      continue;
    }
    const maxIntervalS = optionInt(pb.options, 'ipv6_ra_max_interval', MAX_INTERVAL_DEFAULT);
    const minDefault = maxIntervalS >= 9 ? Math.trunc(maxIntervalS / 3) : Math.trunc((maxIntervalS * 3) / 4);
    specs.push({ port: pb.logical_port, dpKey: dp.tunnel_key, portKey: peer.tunnel_key, minIntervalS: optionInt(pb.options, 'ipv6_ra_min_interval', minDefault), maxIntervalS, packet });
  }
  return { specs, skipped };
}

/**
 * The Port_Binding rows periodicRaSpecs read last time (the advertising router ports and their
 * peers, by UUID, and the peers' names, found or not), so that an update that touches none of
 * them, and makes no other port advertise, leaves its result as it was: most updates (a VIF
 * added, bound, moved) are then not a pass over every binding.
 */
export class PeriodicRaInputs {
  private readonly uuids = new Set<string>();
  private readonly names = new Set<string>();
  private known = false;

  clear(): void {
    this.uuids.clear();
    this.names.clear();
    this.known = true;
  }

  read(uuid: string): void {
    this.uuids.add(uuid);
  }

  readName(name: string): void {
    this.names.add(name);
  }

  /** Whether `changes` may change what periodicRaSpecs returns (always before its first run). */
  concerns(changes: readonly { readonly table: string; readonly uuid: string; readonly row?: Row | undefined }[]): boolean {
    if (!this.known) return true;
    for (const c of changes) {
      if (c.table === 'Datapath_Binding') return true;
      if (c.table !== 'Port_Binding') continue;
      if (this.uuids.has(c.uuid)) return true;
      const pb = c.row as unknown as sb.Port_Binding | undefined;
      if (pb === undefined) continue;
      if (pb.options.has('ipv6_ra_send_periodic') || this.names.has(pb.logical_port)) return true;
    }
    return false;
  }
}

/** The packet-out that injects an advertisement into the switch port `spec` names, for this chassis's ports only. */
export function periodicRaPacketOut(spec: Pick<PeriodicRaSpec, 'dpKey' | 'portKey' | 'packet'>): Extract<OfMessage, { kind: 'packet_out' }> {
  const localOnly = 1n << BigInt(MLF.LOCAL_ONLY);
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data: spec.packet,
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(spec.dpKey) },
      { kind: 'set_field', field: LOG_REG.INPORT, value: BigInt(spec.portKey) },
      { kind: 'set_field', field: LOG_REG.FLAGS, value: localOnly, mask: localOnly },
      { kind: 'resubmit', table: OFTABLE.LOG_INGRESS_PIPELINE, inPort: OFPP10_CONTROLLER },
    ],
  };
}

/** Advertisements sent, and those the channel could not take. */
export type PeriodicRaStats = AnnounceStats;

interface RaState extends AnnounceState {
  spec: PeriodicRaSpec;
}

/** The schedule of the advertisements: one timer, for the earliest due. */
export class PeriodicRas extends AnnounceSchedule<RaState> {
  constructor(private readonly ra: AnnounceOptions & {
    /** [0, 1) */
    readonly random: () => number;
  }) {
    super(ra);
  }

  /** ipv6_ra_calc_next_announce: min_interval plus a random part of the rest. */
  private nextAnnounce(spec: PeriodicRaSpec): number {
    const minMs = spec.minIntervalS * 1000;
    const spanMs = Math.max(0, spec.maxIntervalS * 1000 - minMs);
    return this.ra.timers.now() + minMs + Math.floor(this.ra.random() * spanMs);
  }

  /** The ports to advertise for now: new ones start their schedule, changed intervals restart it, others keep it. */
  sync(specs: readonly PeriodicRaSpec[]): void {
    const seen = new Set<string>();
    for (const spec of specs) {
      seen.add(spec.port);
      const old = this.states.get(spec.port);
      if (old === undefined) this.states.set(spec.port, { spec, nextMs: this.nextAnnounce(spec) });
      else {
        const restart = old.spec.minIntervalS !== spec.minIntervalS || old.spec.maxIntervalS !== spec.maxIntervalS;
        old.spec = spec;
        if (restart) old.nextMs = this.nextAnnounce(spec);
      }
    }
    for (const port of [...this.states.keys()]) if (!seen.has(port)) this.states.delete(port);
    this.arm();
  }

  /** The ports with a schedule, for tests and counters. */
  get ports(): string[] {
    return this.keys;
  }

  protected packetsOf(s: RaState): { message: OfMessage; what: string }[] {
    return [{ message: periodicRaPacketOut(s.spec), what: `router advertisement for ${s.spec.port}` }];
  }

  protected reschedule(s: RaState): void {
    s.nextMs = this.nextAnnounce(s.spec);
  }
}
