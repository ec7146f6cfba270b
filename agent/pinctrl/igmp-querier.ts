// The IGMP and MLD querier (ovn-controller 23.03's ip_mcast_querier_*): a local switch whose SB
// IP_Multicast row has enabled, querier and an eth_src that parses gets, every query_interval
// seconds, an IGMPv3 general query to 224.0.0.1 when its ip4_src parses and an MLDv2 general
// query to ff02::1 when its ip6_src parses (each on its own; both on one schedule), flooded to
// the switch's ports on this chassis (_MC_flood from the local output table, MLF_LOCAL_ONLY set).
// The hosts answer with their memberships, which keeps what snooping learned (igmp-snooping.ts)
// from ageing out; without queries a group lives idle_timeout after its join.
//
// `querierSpecs` reads what to query (pure); `IgmpQueriers` keeps the schedule, with injected
// timers (announce-schedule.ts).
import type * as sb from '../../ovsdb/rows/sb.js';
import { LOG_REG, MLF, OFTABLE } from '../compile/tables.js';
import type { Locality } from '../flows/local-datapaths.js';
import { OFPP } from '../openflow/actions.js';
import { OFP_NO_BUFFER, type OfMessage } from '../openflow/messages.js';
import { parseIpv6 } from '../expr/lexer.js';
import { AnnounceSchedule, type AnnounceState } from './announce-schedule.js';
import { IGMP_TYPE, MLD_TYPE } from './igmp-packet.js';
import {
  buildEthernet, buildIcmp6, buildIpv4, buildIpv6, ETH_TYPE, internetChecksum, IP_PROTO, parseIpv4, parseMac, type Ipv4, type Ipv6, type Mac,
} from './packet.js';

/** OVN_MCAST_FLOOD_TUNNEL_KEY: every port of the switch. */
export const MC_FLOOD_KEY = 32768;
/** OVN_MCAST_* defaults (lib/ip-mcast-index.h) for a row without the column. */
const DEFAULT_IDLE_TIMEOUT_S = 300;
const MIN_QUERY_INTERVAL_S = 1;
const DEFAULT_QUERY_MAX_RESP_S = 1;
/** The first query of a switch: soon after it becomes a querier's, as ovn-controller's first run sends it. */
export const QUERIER_FIRST_DELAY_MS = 0;

const ALL_HOSTS: Ipv4 = 0xe0000001;
const ALL_HOSTS_MAC: Mac = '01:00:5e:00:00:01';
const IPPROTO_IGMP = 2;
const ALL_HOSTS6: Ipv6 = (0xff02n << 112n) | 1n;
/**
 * The Ethernet destination of ovn-controller's MLD queries: 33:33:00:00:00:00, not ff02::1's own
 * 33:33:00:00:00:01 (ip_mcast_snoop_cfg_load). Kept for byte-equal queries; a host takes the
 * frame all the same, since the group is all-hosts and the MAC is multicast.
 */
const MLD_QUERY_MAC: Mac = '33:33:00:00:00:00';
const IPV6_HOPOPTS = 0;
/**
 * The 8-byte hop-by-hop header of an MLD message: next header ICMPv6, length 0 (8 bytes), the
 * router alert option (type 5, length 2, value 0: MLD), then two Pad1 bytes, as
 * packet_set_ipv6_ext_header leaves them on the zeroed packet.
 */
const MLD_HOPOPTS = [IP_PROTO.ICMPV6, 0, 5, 2, 0, 0, 0, 0] as const;
/** An MLDv2 query without sources, after the ICMPv6 type, code and checksum (RFC 3810 5.1). */
const MLD_QUERY_BODY_BYTES = 24;
/**
 * The TOS byte and the don't-fragment flag as pinctrl_compose_ipv4 leaves them: it sets
 * IP_DSCP_CS6, then packet_set_ipv4 writes the tos it is given, 0, over it.
 */
const TOS_COMPOSED = 0;
const IP_DF = 0x4000;
const OFPP10_CONTROLLER = 0xfffd;

/** One switch this chassis queries. */
export interface QuerierSpec {
  /** The Datapath_Binding UUID. */
  readonly key: string;
  readonly dpKey: number;
  readonly ethSrc: Mac;
  /** IGMP queries from this address; none without it. */
  readonly ip4Src: Ipv4 | undefined;
  /** MLD queries from this address; none without it. */
  readonly ip6Src: Ipv6 | undefined;
  readonly intervalS: number;
  readonly maxRespS: number;
}

/** The local switches to query now, from their IP_Multicast rows (ip_mcast_snoop_cfg_load). */
export function querierSpecs(rows: Iterable<sb.IP_Multicast>, datapath: (uuid: string) => sb.Datapath_Binding | undefined, locality: Locality): QuerierSpec[] {
  const out: QuerierSpec[] = [];
  for (const r of rows) {
    if (r.enabled[0] !== true || r.querier[0] !== true || !locality.datapaths.has(r.datapath)) continue;
    const dp = datapath(r.datapath);
    const ethSrc = parseMac(r.eth_src);
    const ip4Src = r.ip4_src === '' ? undefined : parseIpv4(r.ip4_src);
    const ip6Src = parseIpv6(r.ip6_src) ?? undefined;
    if (dp === undefined || ethSrc === undefined || (ip4Src === undefined && ip6Src === undefined)) continue;
    const idle = r.idle_timeout[0] ?? DEFAULT_IDLE_TIMEOUT_S;
    const intervalS = r.query_interval[0] ?? Math.max(MIN_QUERY_INTERVAL_S, Math.floor(idle / 2));
    out.push({ key: r.datapath, dpKey: dp.tunnel_key, ethSrc, ip4Src, ip6Src, intervalS: Math.max(MIN_QUERY_INTERVAL_S, intervalS), maxRespS: r.query_max_resp[0] ?? DEFAULT_QUERY_MAX_RESP_S });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** An IGMPv3 general query (RFC 3376 4.1), max response and QQIC in tenths of seconds as pinctrl writes them. */
export function igmpQueryPacket(spec: { readonly ethSrc: Mac; readonly ip4Src: Ipv4; readonly maxRespS: number }): Buffer {
  const igmp = Buffer.alloc(12);
  const tenths = (spec.maxRespS * 10) & 0xff;
  igmp[0] = IGMP_TYPE.QUERY;
  igmp[1] = tenths;
  // group 0.0.0.0, S/QRV 0, QQIC, no sources.
  igmp[9] = tenths;
  igmp.writeUInt16BE(internetChecksum(igmp), 2);
  const ip = buildIpv4({ tos: TOS_COMPOSED, id: 0, flagsFragment: IP_DF, ttl: 1, protocol: IPPROTO_IGMP, src: spec.ip4Src, dst: ALL_HOSTS }, igmp);
  return buildEthernet({ dst: ALL_HOSTS_MAC, src: spec.ethSrc, ethType: ETH_TYPE.IPV4 }, ip);
}

/**
 * An MLDv2 general query (RFC 3810 5.1) to ff02::1 behind the router alert, hop limit 1, as
 * ip_mcast_querier_send_mld writes it: maximum response delay query_max_resp in milliseconds,
 * QQIC query_max_resp in seconds (IGMP's is in tenths), S and QRV 0.
 */
export function mldQueryPacket(spec: { readonly ethSrc: Mac; readonly ip6Src: Ipv6; readonly maxRespS: number }): Buffer {
  const body = Buffer.alloc(MLD_QUERY_BODY_BYTES);
  body.writeUInt16BE((spec.maxRespS * 1000) & 0xffff, 0);
  // reserved, group ::, S/QRV 0 (bytes 2..20), then QQIC and no sources.
  body[21] = spec.maxRespS & 0xff;
  const mld = buildIcmp6({ type: MLD_TYPE.QUERY, code: 0 }, body, spec.ip6Src, ALL_HOSTS6);
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IPV6_HOPOPTS, hopLimit: 1, src: spec.ip6Src, dst: ALL_HOSTS6 }, Buffer.concat([Buffer.from(MLD_HOPOPTS), mld]));
  return buildEthernet({ dst: MLD_QUERY_MAC, src: spec.ethSrc, ethType: ETH_TYPE.IPV6 }, ip);
}

/** The packet-out that floods a query (`data`) on datapath `dpKey` to its ports on this chassis only. */
export function queryPacketOut(dpKey: number, data: Buffer): Extract<OfMessage, { kind: 'packet_out' }> {
  const localOnly = 1n << BigInt(MLF.LOCAL_ONLY);
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data,
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(dpKey) },
      { kind: 'set_field', field: LOG_REG.OUTPORT, value: BigInt(MC_FLOOD_KEY) },
      { kind: 'set_field', field: LOG_REG.FLAGS, value: localOnly, mask: localOnly },
      { kind: 'resubmit', table: OFTABLE.LOCAL_OUTPUT, inPort: OFPP10_CONTROLLER },
    ],
  };
}

/** A switch's queries each interval, IGMP before MLD (ip_mcast_querier_send's order), with their names for problem reports. */
export function querierPacketOuts(spec: QuerierSpec): { message: Extract<OfMessage, { kind: 'packet_out' }>; what: string }[] {
  const { ethSrc, ip4Src, ip6Src, maxRespS } = spec;
  const out: { message: Extract<OfMessage, { kind: 'packet_out' }>; what: string }[] = [];
  if (ip4Src !== undefined) out.push({ message: queryPacketOut(spec.dpKey, igmpQueryPacket({ ethSrc, ip4Src, maxRespS })), what: `IGMP query on datapath ${spec.dpKey}` });
  if (ip6Src !== undefined) out.push({ message: queryPacketOut(spec.dpKey, mldQueryPacket({ ethSrc, ip6Src, maxRespS })), what: `MLD query on datapath ${spec.dpKey}` });
  return out;
}

interface QuerierState extends AnnounceState {
  spec: QuerierSpec;
}

/** The queries' schedule: one timer, for the earliest due. */
export class IgmpQueriers extends AnnounceSchedule<QuerierState> {
  /** The switches to query now: a new one is queried at once, a known one keeps its schedule (with its new settings), one gone stops. */
  sync(specs: readonly QuerierSpec[]): void {
    const seen = new Set<string>();
    const now = this.options.timers.now();
    for (const spec of specs) {
      seen.add(spec.key);
      const old = this.states.get(spec.key);
      if (old === undefined) this.states.set(spec.key, { spec, nextMs: now + QUERIER_FIRST_DELAY_MS });
      else {
        // A shorter interval takes effect now rather than after the longer one.
        if (spec.intervalS < old.spec.intervalS) old.nextMs = Math.min(old.nextMs, now + spec.intervalS * 1000);
        old.spec = spec;
      }
    }
    for (const key of [...this.states.keys()]) if (!seen.has(key)) this.states.delete(key);
    this.arm();
  }

  protected packetsOf(s: QuerierState): { message: OfMessage; what: string }[] {
    return querierPacketOuts(s.spec);
  }

  protected reschedule(s: QuerierState, now: number): void {
    s.nextMs = now + s.spec.intervalS * 1000;
  }
}
