// QoS flows in ovn-northd 23.03's spelling (build_qos): a switch's QoS rules mark DSCP in the
// QoS-mark stages and meter bandwidth in the QoS-meter stages, each in its direction's
// pipeline, at the rule's own priority. The stages' default flows are the switch's
// (lflows/switch.ts).
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { QosFacts } from '../acls.js';
import type { FlowHints } from './flow.js';
import { StageIds, lflow } from './flow.js';

/** The flows of a switch's QoS rules (`ld`: the switch's logical datapath). */
export function qosFlows(ld: readonly Uuid[], rules: readonly QosFacts[]): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const ids = new StageIds();
  for (const q of rules) {
    const hint: FlowHints = { hint: q.uuid, ids };
    const ingress = q.direction === 'from-lport';
    if (q.dscp !== undefined) flows.push(lflow(ld, ingress ? 'ls_in_qos_mark' : 'ls_out_qos_mark', q.priority, q.match, `ip.dscp = ${q.dscp}; next;`, hint));
    if (q.rate === undefined) continue;
    const meter = q.burst !== 0 ? `set_meter(${q.rate}, ${q.burst});` : `set_meter(${q.rate});`;
    flows.push(lflow(ld, ingress ? 'ls_in_qos_meter' : 'ls_out_qos_meter', q.priority, q.match, `${meter} next;`, hint));
  }
  return flows;
}
