// OVN describes the select group a ct_lb/ct_lb_mark, fwd_group or select action needs as
// ovs-ofctl group text (the action compiler's GroupRequest.description, keyed by that text as
// ovn-controller's group table is). This reads exactly those forms back into a GroupSpec the
// switch backends install:
//   type=select,selection_method=dp_hash|hash[,selection_method_param=P][,fields(f,…)],
//   bucket=bucket_id=N,weight:W,actions=ct(nat(dst=ADDR[:PORT]),commit,table=T,
//     zone=NXM_NX_REGn[0..15],exec(set_field:V/M->ct_mark|ct_label,…)),bucket=…
// fwd_group's (agent/actions/fwd-group.ts), whose buckets name no id and no weight (Open
// vSwitch numbers them in order and weighs each 1):
//   bucket=[watch_port:P,]load=0xK->NXM_NX_REG15[0..15],resubmit(,T),bucket=…
// and select's (agent/actions/select.ts), whose buckets load the member's id into bits of a
// field, by Open vSwitch's name of the field, their ids counting from 0 in order:
//   bucket=bucket_id=N,weight:W,actions=load:ID->FIELD[A..B],resubmit(,T),bucket=…
// Anything else is an error naming what could not be read.

import { ofWidth } from '../actions/fields.js';
import { fieldOfOvsName } from '../compile/ofctl.js';
import type { GroupBucket, GroupSpec, OfAction } from '../openflow/types.js';

/** ovs-ofctl's field names in selection fields → ours (tp_src and tp_dst are its aliases of the TCP
 *  ports: ovn-northd passes them on for a load balancer without a protocol). */
const hashFieldNames: Readonly<Record<string, string>> = {
  eth_src: 'eth_src', eth_dst: 'eth_dst', dl_src: 'eth_src', dl_dst: 'eth_dst',
  ip_src: 'ipv4_src', ip_dst: 'ipv4_dst', nw_src: 'ipv4_src', nw_dst: 'ipv4_dst',
  ipv6_src: 'ipv6_src', ipv6_dst: 'ipv6_dst',
  tcp_src: 'tcp_src', tcp_dst: 'tcp_dst', tp_src: 'tcp_src', tp_dst: 'tcp_dst', udp_src: 'udp_src', udp_dst: 'udp_dst', sctp_src: 'sctp_src', sctp_dst: 'sctp_dst',
};

const bucketRe = /^bucket_id=(\d+),weight:(\d+),actions=ct\(nat\(dst=([^()]+)\),commit,table=(\d+),zone=NXM_NX_REG(\d+)\[0\.\.15\],exec\(([^()]*)\)\)$/;
const fwdBucketRe = /^(?:watch_port:(\d+),)?load=0x([0-9a-fA-F]+)->NXM_NX_REG15\[0\.\.15\],resubmit\(,(\d+)\)$/;
/** The largest OpenFlow port a bucket may watch (OFPP_MAX - 1). */
const WATCH_PORT_MAX = 0xfeff;
const setFieldRe = /^set_field:(\d+|0x[0-9a-fA-F]+)\/(\d+|0x[0-9a-fA-F]+)->(ct_mark|ct_label)$/;
const selectBucketRe = /^bucket_id=(\d+),weight:(\d+),actions=load:(\d+)->([a-z0-9_]+)\[(\d+)\.\.(\d+)\],resubmit\(,(\d+)\)$/;
/** A bucket's weight and a select member's id are 16 bits. */
const U16_MAX = 0xffff;
const U64_MAX = (1n << 64n) - 1n;

/**
 * A select member's bucket (see above) as the agent installs it: the id written into the
 * field's bits (a set_field with the bits' mask, none when they are the whole field), then the
 * resubmit; or why it cannot be read.
 */
function selectBucket(m: RegExpExecArray, place: number): GroupBucket | string {
  const [bucketId, weight, id, start, end, table] = [m[1], m[2], m[3], m[5], m[6], m[7]].map(Number) as [number, number, number, number, number, number];
  if (bucketId !== place) return `bucket_id ${bucketId} is not the bucket's place ${place}`;
  if (weight > U16_MAX) return `weight ${weight} does not fit 16 bits`;
  const field = fieldOfOvsName(m[4] as string);
  const width = field === undefined ? undefined : ofWidth(field);
  if (field === undefined || width === undefined) return `unknown field ${m[4]}`;
  if (start > end || end >= width) return `bits ${start}..${end} are not bits of the ${width}-bit ${m[4]}`;
  const bits = BigInt(end - start + 1);
  if (id > U16_MAX || BigInt(id) >> bits !== 0n) return `id ${id} does not fit the bits it is loaded into`;
  const mask = ((1n << bits) - 1n) << BigInt(start);
  const whole = (1n << BigInt(width)) - 1n;
  const load: OfAction = mask === whole
    ? { kind: 'set_field', field, value: BigInt(id) }
    : { kind: 'set_field', field, value: BigInt(id) << BigInt(start), mask };
  return { weight, actions: [load, { kind: 'resubmit', table }] };
}

/** selection_method_param's text as ovs-ofctl reads it (strtoull, base 0), for the forms OVN writes: hex or decimal. */
function methodParam(text: string): bigint | undefined {
  if (!/^(0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)$/.test(text)) return undefined;
  const v = BigInt(text);
  return v > U64_MAX ? undefined : v;
}

function natAddress(text: string): { addr: string; port?: number } | undefined {
  let m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(text);
  if (m !== null) return { addr: m[1] as string, port: Number(m[2]) };
  m = /^([0-9.]+):(\d+)$/.exec(text);
  if (m !== null) return { addr: m[1] as string, port: Number(m[2]) };
  if (/^[0-9.]+$/.test(text) || /^[0-9a-fA-F:]+$/.test(text)) return { addr: text };
  return undefined;
}

export function parseGroupDescription(groupId: number, desc: string): GroupSpec | { readonly error: string } {
  const fail = (why: string): { error: string } => ({ error: `group ${groupId} "${desc}": ${why}` });
  const parts = desc.split(',bucket=');
  const head = parts.shift() ?? '';
  const hm = /^type=select,selection_method=(dp_hash|hash)(?:,selection_method_param=([0-9a-fA-FxX]+))?(?:,fields\(([^()]*)\))?$/.exec(head);
  if (hm === null) return fail('not a select group as ct_lb, fwd_group or select describes it');
  const selectionMethod = hm[1] as 'dp_hash' | 'hash';
  const param = hm[2] === undefined ? undefined : methodParam(hm[2]);
  if (hm[2] !== undefined && param === undefined) return fail(`cannot read selection_method_param ${hm[2]}`);
  const fields: string[] = [];
  for (const f of hm[3] === undefined || hm[3] === '' ? [] : hm[3].split(',')) {
    const ours = hashFieldNames[f.trim()];
    if (ours === undefined) return fail(`unknown selection field ${f}`);
    fields.push(ours);
  }
  if (parts.length === 0) return fail('no buckets');
  const buckets: GroupBucket[] = [];
  for (const b of parts) {
    const sm = selectBucketRe.exec(b);
    if (sm !== null) {
      const bucket = selectBucket(sm, buckets.length);
      if (typeof bucket === 'string') return fail(bucket);
      buckets.push(bucket);
      continue;
    }
    const f = fwdBucketRe.exec(b);
    if (f !== null) {
      const key = BigInt(`0x${f[2] as string}`);
      if (key > 0xffffn) return fail(`port key 0x${f[2]} does not fit the 16 bits it is loaded into`);
      const watchPort = f[1] === undefined ? undefined : Number(f[1]);
      if (watchPort !== undefined && watchPort > WATCH_PORT_MAX) return fail(`watch_port ${watchPort} is not a port`);
      buckets.push({
        ...(watchPort === undefined ? {} : { watchPort }),
        actions: [
          { kind: 'set_field', field: 'reg15', value: key, mask: 0xffffn },
          { kind: 'resubmit', table: Number(f[3]) },
        ],
      });
      continue;
    }
    const m = bucketRe.exec(b);
    if (m === null) return fail(`cannot read bucket "${b}"`);
    const nat = natAddress(m[3] as string);
    if (nat === undefined) return fail(`cannot read NAT address ${m[3]}`);
    const exec: OfAction[] = [];
    for (const sf of (m[6] as string).split(',').filter((x) => x !== '')) {
      const s = setFieldRe.exec(sf);
      if (s === null) return fail(`cannot read exec action ${sf}`);
      exec.push({ kind: 'set_field', field: s[3] as string, value: BigInt(s[1] as string), mask: BigInt(s[2] as string) });
    }
    const zoneReg = Number(m[5]);
    buckets.push({
      weight: Number(m[2]),
      actions: [{
        kind: 'ct', commit: true, table: Number(m[4]), zone: { field: `reg${zoneReg}`, start: 0, end: 15 },
        nat: { kind: 'dst', addrMin: nat.addr, ...(nat.port === undefined ? {} : { portMin: nat.port }) }, exec,
      }],
    });
  }
  // A parameter of 0 is none, as a group reads back from the switch.
  return {
    groupId, type: 'select', selectionMethod, ...(param !== undefined && param !== 0n ? { selectionMethodParam: param } : {}),
    ...(fields.length > 0 ? { fields } : {}), buckets,
  };
}
