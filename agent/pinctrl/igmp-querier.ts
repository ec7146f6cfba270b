// The IGMP querier (ovn-controller 23.03's ip_mcast_querier_*): a local switch whose SB
// IP_Multicast row has enabled, querier, an eth_src and an ip4_src that parse gets an IGMPv3
// general query every query_interval seconds, from those addresses to 224.0.0.1, flooded to the
// switch's ports on this chassis (_MC_flood from the local output table, MLF_LOCAL_ONLY set).
// The hosts answer with their memberships, which keeps what snooping learned (igmp-snooping.ts)
// from ageing out; without queries a group lives idle_timeout after its join.
//
// `querierSpecs` reads what to query (pure); `IgmpQueriers` keeps the schedule, with injected
// timers (announce-schedule.ts). Left out: the MLD querier (IPv6, ip6_src).
import type * as sb from '../../ovsdb/rows/sb.js';
import { LOG_REG, MLF, OFTABLE } from '../compile/tables.js';
import type { Locality } from '../flows/local-datapaths.js';
import { OFPP } from '../openflow/actions.js';
import { OFP_NO_BUFFER, type OfMessage } from '../openflow/messages.js';
import { AnnounceSchedule, type AnnounceState } from './announce-schedule.js';
import { buildEthernet, buildIpv4, ETH_TYPE, internetChecksum, parseIpv4, parseMac, type Ipv4, type Mac } from './packet.js';

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
const IGMP_QUERY = 0x11;
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
  readonly ip4Src: Ipv4;
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
    if (dp === undefined || ethSrc === undefined || ip4Src === undefined) continue;
    const idle = r.idle_timeout[0] ?? DEFAULT_IDLE_TIMEOUT_S;
    const intervalS = r.query_interval[0] ?? Math.max(MIN_QUERY_INTERVAL_S, Math.floor(idle / 2));
    out.push({ key: r.datapath, dpKey: dp.tunnel_key, ethSrc, ip4Src, intervalS: Math.max(MIN_QUERY_INTERVAL_S, intervalS), maxRespS: r.query_max_resp[0] ?? DEFAULT_QUERY_MAX_RESP_S });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** An IGMPv3 general query (RFC 3376 4.1), max response and QQIC in tenths of seconds as pinctrl writes them. */
export function igmpQueryPacket(spec: Pick<QuerierSpec, 'ethSrc' | 'ip4Src' | 'maxRespS'>): Buffer {
  const igmp = Buffer.alloc(12);
  const tenths = (spec.maxRespS * 10) & 0xff;
  igmp[0] = IGMP_QUERY;
  igmp[1] = tenths;
  // group 0.0.0.0, S/QRV 0, QQIC, no sources.
  igmp[9] = tenths;
  igmp.writeUInt16BE(internetChecksum(igmp), 2);
  const ip = buildIpv4({ tos: TOS_COMPOSED, id: 0, flagsFragment: IP_DF, ttl: 1, protocol: IPPROTO_IGMP, src: spec.ip4Src, dst: ALL_HOSTS }, igmp);
  return buildEthernet({ dst: ALL_HOSTS_MAC, src: spec.ethSrc, ethType: ETH_TYPE.IPV4 }, ip);
}

/** The packet-out that floods a query to the switch's ports on this chassis only. */
export function igmpQueryPacketOut(spec: QuerierSpec): Extract<OfMessage, { kind: 'packet_out' }> {
  const localOnly = 1n << BigInt(MLF.LOCAL_ONLY);
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data: igmpQueryPacket(spec),
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(spec.dpKey) },
      { kind: 'set_field', field: LOG_REG.OUTPORT, value: BigInt(MC_FLOOD_KEY) },
      { kind: 'set_field', field: LOG_REG.FLAGS, value: localOnly, mask: localOnly },
      { kind: 'resubmit', table: OFTABLE.LOCAL_OUTPUT, inPort: OFPP10_CONTROLLER },
    ],
  };
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
    return [{ message: igmpQueryPacketOut(s.spec), what: `IGMP query on datapath ${s.spec.dpKey}` }];
  }

  protected reschedule(s: QuerierState, now: number): void {
    s.nextMs = now + s.spec.intervalS * 1000;
  }
}
