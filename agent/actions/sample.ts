// sample(probability=N, collector_set=N, obs_domain=N, obs_point=N|$cookie): the action OVN
// 23.03's ovn-northd writes before every drop when NB_Global options:debug_drop_collector_set is
// set, so that dropped packets are reported to an IPFIX collector (lib/actions.c, parse_sample,
// format_SAMPLE, encode_SAMPLE). It encodes to Open vSwitch's sample action only when the
// chassis's integration bridge has a Flow_Sample_Collector_Set with that id; otherwise to
// nothing, and a drop stays a plain drop. The observation domain carries the datapath's tunnel
// key in its low 24 bits; $cookie makes the observation point the logical flow's cookie.

import type { OfAction } from '../openflow/types.js';

/** The parsed action (OVN's struct ovnact_sample); unset arguments are 0. */
export interface Sample {
  /** Out of 65535; never 0. */
  readonly probability: number;
  readonly collectorSetId: number;
  /** The observation domain's high 8 bits. */
  readonly obsDomain: number;
  /** A number, or 'cookie': the first 32 bits of the logical flow's UUID. */
  readonly obsPoint: number | 'cookie';
}

/** The action as OVN formats it back (format_SAMPLE): every argument, in this order. */
export function formatSample(s: Sample): string {
  const point = s.obsPoint === 'cookie' ? '$cookie' : String(s.obsPoint);
  return `sample(probability=${s.probability},collector_set=${s.collectorSetId},obs_domain=${s.obsDomain},obs_point=${point});`;
}

/** The first 32 bits of a UUID (OVN's uuid.parts[0]), 0 for text that does not start with 8 hex digits. */
function uuidPart0(uuid: string): number {
  return /^[0-9a-fA-F]{8}/.test(uuid) ? Number.parseInt(uuid.slice(0, 8), 16) : 0;
}

/**
 * encode_SAMPLE: OVS's sample action with the domain (obsDomain << 24) | (dpKey & 0xffffff)
 * and the point given or, for $cookie, the flow's cookie. The caller checks the collector set.
 */
export function encodeSample(s: Sample, dpKey: number, lflowUuid: string): OfAction {
  return {
    kind: 'sample',
    probability: s.probability,
    collectorSetId: s.collectorSetId,
    obsDomainId: ((s.obsDomain << 24) | (dpKey & 0xffffff)) >>> 0,
    obsPointId: s.obsPoint === 'cookie' ? uuidPart0(lflowUuid) : s.obsPoint,
  };
}
