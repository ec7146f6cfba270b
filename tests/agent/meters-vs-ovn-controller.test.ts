// Goal: the meters a chassis installs, and the flows that use them, are the real ovn-controller
// 23.03.1's: QoS rules with a rate (set_meter, with and without burst) and a DSCP mark, ACLs
// logging through a meter and through a fair meter (a copy of it per ACL), CoPP's
// controller_meter (a reject ACL's, and the trigger_event of load balancer VIPs without
// backends); and again after a band changes, a QoS rule goes, a meter is deleted and
// created again after the ACLs that name it. Method: real NB and SB ovsdb-servers and the real
// ovn-northd; the real ovn-controller as hv1 with two VMs on bridge A. Our DesiredFlows, fed
// the same SB as incremental steps with hv1's view, installs the flows of the logical flows that
// name meters or mark DSCP (by cookie) and its meters into bridge B through our OpenFlow
// channel (reconcile). `ovs-ofctl dump-flows` of both, each meter:N and meter_id=N replaced by
// meter N's configuration from `dump-meters` (the two number meters in the order they met
// them), must be equal, and so must the configurations of all meters, after every change. The
// incremental engine must also equal a fresh one at each step.

import t, { type Test } from 'tap';
import type { SbRowChange } from '../../agent/sb-source.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { converge, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';
import { difference } from './flows-fixtures.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;

/** The cookies of the logical flows that name a meter or mark DSCP. */
function meterCookies(rows: Iterable<SbRowChange>): Set<bigint> {
  const out = new Set<bigint>();
  for (const c of rows) {
    if (c.table !== 'Logical_Flow' || c.row === undefined) continue;
    const lf = c.row as unknown as sb.Logical_Flow;
    if (/set_meter|meter=|ip\.dscp =/.test(lf.actions) || lf.controller_meter.length > 0) out.add(BigInt(`0x${lf._uuid.slice(0, 8)}`));
  }
  return out;
}

/** `ovs-ofctl dump-meters`: meter id → its configuration text ("kbps burst stats bands= type=drop rate=… burst_size=…"). */
async function meterTable(sw: OvsSwitch): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const m of (await sw.ofctl('dump-meters')).split(/\n(?=meter=)/)) {
    const r = /meter=(\d+) (.*)$/s.exec(m.trim());
    if (r !== null) out.set(r[1] as string, (r[2] as string).replace(/\s+/g, ' ').trim());
  }
  return out;
}

/**
 * A bridge's flows of those cookies, as `ovs-ofctl dump-flows --no-stats` prints them, each
 * meter id replaced by its meter's configuration (or "none" for a controller's meter that is not
 * installed), sorted; and its meters' configurations, sorted.
 */
async function dump(sw: OvsSwitch, cookies: ReadonlySet<bigint>): Promise<string[]> {
  const meters = await meterTable(sw);
  const out: string[] = [];
  for (const line of (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim())) {
    const m = /^cookie=(0x[0-9a-f]+), /.exec(line);
    if (m === null || !cookies.has(BigInt(m[1] as string))) continue;
    out.push(line.replace(/(meter:|meter_id=)(\d+)/g, (_, k: string, id: string) => `${k}{${meters.get(id) ?? 'none'}}`));
  }
  return [...out.sort(), ...[...meters.values()].map((c) => `meter ${c}`).sort()];
}

async function differential(t: Test): Promise<void> {
  const { sb, nbctl } = await startRealCentral(t, 'meters-');
  await nbctl('ls-add', 'sw0');
  for (const v of twoVms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr);
  // QoS: a rate with a burst, a rate with a DSCP mark, an egress rate.
  await nbctl('qos-add', 'sw0', 'from-lport', '100', 'inport == "vm1"', 'rate=1000', 'burst=200');
  await nbctl('qos-add', 'sw0', 'from-lport', '101', 'inport == "vm2" && ip4', 'rate=500', 'dscp=10');
  await nbctl('qos-add', 'sw0', 'to-lport', '100', 'outport == "vm1"', 'rate=300');
  // ACLs logging through a meter, and two through one fair meter (each its own copy).
  await nbctl('meter-add', 'acl-meter', 'drop', '10', 'pktps');
  await nbctl('--fair', 'meter-add', 'fair-meter', 'drop', '100', 'kbps', '50');
  await nbctl('--log', '--meter=acl-meter', '--name=dns', 'acl-add', 'sw0', 'to-lport', '1000', 'udp.dst == 53', 'allow');
  await nbctl('--log', '--meter=fair-meter', '--name=ssh', 'acl-add', 'sw0', 'to-lport', '1001', 'tcp.dst == 22', 'drop');
  await nbctl('--log', '--meter=fair-meter', '--name=telnet', 'acl-add', 'sw0', 'to-lport', '1002', 'tcp.dst == 23', 'drop');
  // CoPP: a reject ACL's packets punted through a meter (controller_meter on its flows).
  await nbctl('acl-add', 'sw0', 'from-lport', '1003', 'tcp.dst == 25', 'reject');
  await nbctl('meter-add', 'copp-meter', 'drop', '5', 'pktps');
  await nbctl('copp-add', 'copp0', 'reject', 'copp-meter');
  await nbctl('ls-copp-add', 'copp0', 'sw0');
  // CoPP again: a VIP without backends raises the empty_lb_backends event (trigger_event), its
  // packets punted through the event-elb meter; IPv4 with a port, IPv6 with one, and one without.
  await nbctl('--event', 'lb-add', 'lb-idle', '10.0.0.100:80', '', 'tcp');
  await nbctl('--event', 'lb-add', 'lb-idle6', '[fd00::64]:8080', '', 'udp');
  await nbctl('--event', 'lb-add', 'lb-idle-noport', '10.0.0.101', '');
  for (const lb of ['lb-idle', 'lb-idle6', 'lb-idle-noport']) await nbctl('ls-lb-add', 'sw0', lb);
  await nbctl('copp-add', 'copp0', 'event-elb', 'copp-meter');

  const { sw: swA, log } = await startRealController(t, sb.socketPath, twoVms, nbctl);
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, twoVms, swA);
  const agent = follower.agent;

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    const cookies = (): Set<bigint> => meterCookies(follower.rows());
    const { real: a, ours: b, ms } = await converge(follower,
      () => ch.reconcile([...agent.table.flows()].map(([, f]) => f).filter((f) => cookies().has(f.cookie)), { meters: [...agent.meterSpecs().values()] }),
      () => Promise.all([dump(swA, cookies()), dump(swB, cookies())]), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows and meters, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow and meter for meter`);
    t.equal(difference(agent, follower.fresh()), undefined, `${name}: the incremental engine equals a fresh one`);
  };
  const has = (s: string) => (a: readonly string[]): boolean => a.some((l) => l.includes(s));
  const lacks = (s: string) => (a: readonly string[]): boolean => !a.some((l) => l.includes(s));
  const both = (...ps: ((a: readonly string[]) => boolean)[]) => (a: readonly string[]): boolean => ps.every((p) => p(a));

  await step('QoS, ACL log and CoPP meters', both(has('meter kbps burst stats bands= type=drop rate=1000 burst_size=200'), has('meter kbps stats bands= type=drop rate=300'),
    has('meter pktps stats bands= type=drop rate=10'), has('meter kbps burst stats bands= type=drop rate=100 burst_size=50'), has('meter pktps stats bands= type=drop rate=5'),
    has('set_field:10/0x3f->ip_dscp'), has('meter_id={pktps stats bands= type=drop rate=5}'),
    has('controller(userdata=00.00.00.0f.00.00.00.00.00.00.00.00.00.01.00.0d.31.30.2e.30.2e.30.2e.31.30.30.3a.38.30.00.02.00.03.74.63.70'),
    has('udp6,metadata=0x1,ipv6_dst=fd00::64,tp_dst=8080 actions=controller(userdata=00.00.00.0f'), has('tcp,metadata=0x1,nw_dst=10.0.0.101 actions=controller(userdata=00.00.00.0f')));
  const band = (await nbctl('--bare', '--columns=bands', 'find', 'Meter', 'name=acl-meter')).trim();
  await nbctl('set', 'Meter_Band', band, 'rate=20');
  await nbctl('--wait=hv', 'sync');
  await step('acl-meter\'s band changed', both(has('meter pktps stats bands= type=drop rate=20'), lacks('meter pktps stats bands= type=drop rate=10')));
  await nbctl('qos-del', 'sw0', 'to-lport');
  await nbctl('--wait=hv', 'sync');
  await step('the egress QoS rule gone', lacks('rate=300'));
  await nbctl('meter-del', 'acl-meter');
  await nbctl('--wait=hv', 'sync');
  await step('acl-meter deleted (its ACL still names it)', both(lacks('rate=20'), has('meter_id={none}')));
  await nbctl('meter-add', 'acl-meter', 'drop', '30', 'pktps');
  await nbctl('--wait=hv', 'sync');
  await step('acl-meter created again', both(has('meter pktps stats bands= type=drop rate=30'), lacks('meter_id={none}')));
}

t.test('QoS, ACL-log and CoPP meters as the real ovn-controller installs them, as they change', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
