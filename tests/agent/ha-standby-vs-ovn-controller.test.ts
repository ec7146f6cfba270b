// Goal: a standby member of an HA group holds the datapaths of the group's ports as the real
// ovn-controller 23.03.1 does (binding.c consider_ha_lport): a router whose distributed gateway
// port lists this chassis as a lower-priority gateway, the switches that router reaches, and a
// switch whose external port's HA_Chassis_Group lists it (that port related here too: the flows of
// an ACL on its port group name it), all with
// nothing of this chassis bound there. Their logical flows are installed, so that a failover
// only has to flip which member is active; they leave when the chassis leaves the groups, and
// come back with it. Method: real NB and SB ovsdb-servers and ovn-northd; the real
// ovn-controller as hv1 with two VMs on an unrelated switch; hv2, the higher-priority member, a
// Chassis registered by ovn-sbctl (no BFD session to it comes up, so no member is active on
// hv1). Our DesiredFlows follows the same SB with hv1's view (the real tunnel to hv2, no BFD
// session up) and installs into a bridge of its own; the logical tables (ingress 8..37, egress
// 42..63) of those datapaths, as `ovs-ofctl dump-flows` prints them, must be equal after each
// change, and the incremental engine must equal a fresh one.

import t, { type Test } from 'tap';
import { OFTABLE } from '../../agent/compile/tables.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { converge, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';
import { until } from '../helpers/ovnts-cli.js';
import { formatFlow } from '../../agent/compile/index.js';
import type { FlowSpec } from '../../agent/openflow/types.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;
/** The datapaths hv1 holds only as a standby member. */
const STANDBY_DATAPATHS = ['lr1', 'pub', 'sw-int', 'sw-ext'];

/** Whether a table is one of the logical pipelines' (what a local datapath's logical flows compile into). */
function isLogicalTable(table: number): boolean {
  return (table >= OFTABLE.LOG_INGRESS_PIPELINE && table < OFTABLE.LOG_INGRESS_PIPELINE + 30)
    || (table >= OFTABLE.LOG_EGRESS_PIPELINE && table < OFTABLE.SAVE_INPORT);
}

/** A bridge's flows in the logical tables whose match names one of `keys`' metadata, sorted. */
async function dump(sw: OvsSwitch, keys: ReadonlySet<number>): Promise<string[]> {
  const out: string[] = [];
  for (const line of (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim())) {
    const m = /^cookie=0x[0-9a-f]+, table=(\d+), .*\bmetadata=(0x[0-9a-f]+)\b/.exec(line);
    if (m !== null && isLogicalTable(Number(m[1])) && keys.has(Number(m[2]))) out.push(line);
  }
  return out.sort();
}

const texts = (fs: readonly FlowSpec[]): string[] => fs.map((f) => formatFlow(f, { cookie: true })).sort();

async function differential(t: Test): Promise<void> {
  const { sb, nbctl, sbctl } = await startRealCentral(t, 'hastandby-');
  await nbctl('ls-add', 'sw0');
  for (const v of twoVms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr);
  // lr1: a gateway port to "pub" on hv2 (priority 20) and hv1 (10), an inside switch with a VM
  // bound nowhere, SNAT for the inside (is_chassis_resident flows).
  await nbctl('lr-add', 'lr1');
  await nbctl('lrp-add', 'lr1', 'lr1-pub', '00:00:00:00:aa:01', '172.16.0.1/24');
  await nbctl('lrp-set-gateway-chassis', 'lr1-pub', 'hv2', '20');
  await nbctl('lrp-set-gateway-chassis', 'lr1-pub', 'hv1', '10');
  await nbctl('lrp-add', 'lr1', 'lr1-int', '00:00:00:00:aa:02', '192.168.1.1/24');
  for (const [sw, port, rport] of [['pub', 'pub-lr1', 'lr1-pub'], ['sw-int', 'int-lr1', 'lr1-int']] as const) {
    await nbctl('ls-add', sw);
    await nbctl('lsp-add', sw, port, '--', 'lsp-set-type', port, 'router', '--', 'lsp-set-addresses', port, 'router', '--', 'lsp-set-options', port, `router-port=${rport}`);
  }
  await nbctl('lsp-add', 'pub', 'ln-pub', '--', 'lsp-set-type', 'ln-pub', 'localnet', '--', 'lsp-set-addresses', 'ln-pub', 'unknown', '--', 'lsp-set-options', 'ln-pub', 'network_name=physnet');
  await nbctl('lsp-add', 'sw-int', 'int-vm', '--', 'lsp-set-addresses', 'int-vm', '00:00:00:00:bb:01 192.168.1.10');
  await nbctl('lr-nat-add', 'lr1', 'snat', '172.16.0.1', '192.168.1.0/24');
  // sw-ext: an external port whose HA group is hv2 (20) and hv1 (10).
  await nbctl('ls-add', 'sw-ext');
  await nbctl('lsp-add', 'sw-ext', 'ln-ext', '--', 'lsp-set-type', 'ln-ext', 'localnet', '--', 'lsp-set-addresses', 'ln-ext', 'unknown', '--', 'lsp-set-options', 'ln-ext', 'network_name=physnet');
  await nbctl('ha-chassis-group-add', 'hg');
  await nbctl('ha-chassis-group-add-chassis', 'hg', 'hv2', '20');
  await nbctl('ha-chassis-group-add-chassis', 'hg', 'hv1', '10');
  const hg = (await nbctl('--bare', '--columns=_uuid', 'find', 'HA_Chassis_Group', 'name=hg')).trim();
  await nbctl('lsp-add', 'sw-ext', 'ext1', '--', 'lsp-set-type', 'ext1', 'external', '--', 'lsp-set-addresses', 'ext1', '00:00:00:00:cc:01 10.1.0.5',
    '--', 'set', 'Logical_Switch_Port', 'ext1', `ha_chassis_group=${hg}`);
  // An ACL on a port group of ext1: a port group's flows name only the ports related here.
  await nbctl('pg-add', 'pg_ext', 'ext1');
  await nbctl('acl-add', 'pg_ext', 'to-lport', '1001', 'outport == @pg_ext && ip4', 'allow-related');
  await sbctl('chassis-add', 'hv2', 'geneve', '127.0.0.2');

  const { sw: swA, log } = await startRealController(t, sb.socketPath, twoVms, nbctl);
  // The real chassis's tunnel to hv2, which our view names too.
  const tunnelPort = await until(() => `ovn-controller's tunnel to hv2 (${log()})`, async () => {
    // external_ids:ovn-chassis-id is "hv2" or, in OVN 23.03, "hv2@<remote IP>%<local IP>".
    const rows = (await swA.vsctl('--bare', '--columns=name,external_ids', 'find', 'Port', 'external_ids:ovn-chassis-id!=""')).split('\n\n');
    const port = rows.map((r) => r.trim().split('\n')).find((r) => /ovn-chassis-id="?hv2[@"]/.test(r[1] ?? '') || /ovn-chassis-id=hv2\b/.test(r[1] ?? ''));
    return port?.[0]?.trim();
  }, 60_000);
  const ofport = Number((await swA.vsctl('get', 'Interface', tunnelPort, 'ofport')).trim());
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, twoVms, swA, {
    tunnels: new Map([['hv2', { ofport, type: 'geneve', remoteIp: '127.0.0.2' }]]), activeTunnels: new Set(),
  });
  // The Geneve option the flows to hv2 carry, mapped as the real chassis maps it.
  await swB.ofctl('add-tlv-map', '{class=0x102,type=0x80,len=4}->tun_metadata0');
  const agent = follower.agent;
  const keys = new Set<number>();
  for (const name of STANDBY_DATAPATHS) {
    keys.add(Number((await sbctl('--bare', '--columns=tunnel_key', 'find', 'Datapath_Binding', `external_ids:name=${name}`)).trim()));
  }
  t.equal(keys.size, STANDBY_DATAPATHS.length, 'the four datapaths have keys');

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    const { real: a, ours: b, ms } = await converge(follower,
      () => ch.reconcile([...agent.table.flows()].map(([, f]) => f), { groups: [...agent.groupSpecs().values()] }),
      () => Promise.all([dump(swA, keys), dump(swB, keys)]), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.slice(0, 20).join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    t.same(texts([...agent.table.flows()].map(([, f]) => f)), texts([...follower.fresh().table.flows()].map(([, f]) => f)), `${name}: the incremental engine equals a fresh one`);
  };
  const keyOf = new Map(STANDBY_DATAPATHS.map((n, i) => [n, [...keys][i] as number]));
  const on = (a: readonly string[], name: string): boolean => a.some((l) => new RegExp(`metadata=0x${(keyOf.get(name) as number).toString(16)}\\b`).test(l));
  const onEvery = (a: readonly string[]): boolean => STANDBY_DATAPATHS.every((n) => on(a, n));
  // ext1 related here: the ACL's flows for outport == "ext1" (its key in reg15) are installed.
  const ext1 = Number((await sbctl('--bare', '--columns=tunnel_key', 'find', 'Port_Binding', 'logical_port=ext1')).trim());
  const related = (a: readonly string[]): boolean => a.some((l) => new RegExp(`\\breg15=0x${ext1.toString(16)},metadata=0x${(keyOf.get('sw-ext') as number).toString(16)}\\b`).test(l));

  await step('hv1 stands by for lr1-pub and ext1', (a) => onEvery(a) && related(a));
  await nbctl('lrp-del-gateway-chassis', 'lr1-pub', 'hv1');
  await nbctl('ha-chassis-group-remove-chassis', 'hg', 'hv1');
  await nbctl('--wait=hv', 'sync');
  await step('hv1 left both groups', (a) => a.length === 0);
  await nbctl('ha-chassis-group-add-chassis', 'hg', 'hv1', '5');
  await nbctl('--wait=hv', 'sync');
  await step('hv1 back in ext1\'s group only', (a) => on(a, 'sw-ext') && related(a) && !on(a, 'lr1') && !on(a, 'pub') && !on(a, 'sw-int'));
  await nbctl('lrp-set-gateway-chassis', 'lr1-pub', 'hv1', '10');
  await nbctl('--wait=hv', 'sync');
  await step('and in lr1-pub\'s', (a) => onEvery(a));
}

t.test('a standby gateway holds the datapaths of its HA groups as the real ovn-controller\'s', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
