// Goal: the path MTU flows of a port bound on several chassis (a live migration) are the real
// ovn-controller 23.03.1's, flow for flow: on a switch with a localnet port, its traffic to a port
// reached through the localnet is tunnelled instead (table 39, priority 110), and beside that a
// packet bigger than the interface's MTU less the tunnels' overhead is detected (table 37,
// check_pkt_larger) and answered with an ICMPv4 "fragmentation needed" / ICMPv6 "packet too big"
// (table 38, a paused controller action carrying the MTU), from the port (reg14) and to it
// (reg15); and they follow the interface's MTU, the multichassis set, the tunnel's address family
// and which chassis the port is bound on. Method: real NB and SB ovsdb-servers and ovn-northd;
// the real ovn-controller as hv1 binds vm1 (requested-chassis=hv1,hv2) on bridge A, with a
// bridge mapping for sw0's localnet port; hv2 is a Chassis registered by ovn-sbctl, which takes
// vm1 as its additional chassis and holds vm3 as its own ovn-controller would. Our DesiredFlows,
// fed the same SB as incremental steps with hv1's view (the real tunnel, patch port and the MTU
// the switch reports for vm1's interface), installs into bridge B through our OpenFlow channel;
// tables 37, 38 and 39 as `ovs-ofctl dump-flows` prints them must be equal after each change,
// and the incremental engine must equal a fresh one.

import t, { type Test } from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import type { LocalView, TunnelPort } from '../../agent/local-view.js';
import type { FlowSpec } from '../../agent/openflow/types.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { until } from '../helpers/ovnts-cli.js';
import { converge, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController } from '../helpers/real-ovn-controller.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;
const TABLES = new Set([37, 38, 39]);
const vm1 = { name: 'vm1', ofport: 1 } as const;

/** A bridge's flows of tables 37..39 (their defaults too), as `ovs-ofctl dump-flows --no-stats` prints them, sorted. */
async function dump(sw: OvsSwitch): Promise<string[]> {
  const out: string[] = [];
  for (const line of (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim())) {
    const m = /^(?:cookie=0x[0-9a-f]+, )?table=(\d+), /.exec(line);
    if (m !== null && TABLES.has(Number(m[1]))) out.push(line);
  }
  return out.sort();
}

const texts = (fs: readonly FlowSpec[]): string[] => fs.map((f) => formatFlow(f, { cookie: true })).sort();

async function differential(t: Test): Promise<void> {
  const { sb, nbctl, sbctl } = await startRealCentral(t, 'pmtu-');
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'ln-sw0', '--', 'lsp-set-type', 'ln-sw0', 'localnet', '--', 'lsp-set-addresses', 'ln-sw0', 'unknown',
    '--', 'lsp-set-options', 'ln-sw0', 'network_name=physnet');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1 fd00::1', '--', 'lsp-set-options', 'vm1', 'requested-chassis=hv1,hv2');
  await nbctl('lsp-add', 'sw0', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:00:03 10.0.0.3 fd00::3');
  await sbctl('chassis-add', 'hv2', 'geneve', '127.0.0.2');
  await until('vm3 in the SB', async () => ((await sbctl('--bare', '--columns=logical_port', 'find', 'Port_Binding', 'logical_port=vm3')).trim() === 'vm3' ? true : undefined));
  await sbctl('lsp-bind', 'vm3', 'hv2');
  const hv2 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2')).trim();

  const { sw: swA, log } = await startRealController(t, sb.socketPath, [vm1], nbctl);
  await swA.vsctl('add-br', 'br-phys', '--', 'set', 'bridge', 'br-phys', 'datapath_type=netdev');
  await swA.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-bridge-mappings=physnet:br-phys');
  // hv2 takes vm1 as its additional chassis, as its ovn-controller would.
  await sbctl('set', 'Port_Binding', 'vm1', `additional_chassis=${hv2}`);
  await nbctl('--wait=hv', 'sync');

  /** hv1's view of what the real ovn-controller made: its tunnel to hv2 and patch port to br-phys, and vm1's MTU. */
  const realView = async (): Promise<Partial<LocalView>> => {
    const tunnel = await until(() => `ovn-controller's tunnel to hv2 (${log()})`, async () => {
      const rows = (await swA.vsctl('--bare', '--columns=name,external_ids', 'find', 'Port', 'external_ids:ovn-chassis-id!=""')).split('\n\n');
      const port = rows.map((r) => r.trim().split('\n')).find((r) => /ovn-chassis-id="?hv2[@"]/.test(r[1] ?? ''));
      return port?.[0]?.trim();
    }, 60_000);
    const ofport = Number((await swA.vsctl('get', 'Interface', tunnel, 'ofport')).trim());
    const remoteIp = (await swA.vsctl('get', 'Interface', tunnel, 'options:remote_ip')).trim().replace(/"/g, '');
    const patch = await until(() => `ovn-controller's patch port to br-phys (${log()})`, async () => {
      const n = Number((await swA.vsctl('--if-exists', 'get', 'Interface', 'patch-br-int-to-ln-sw0', 'ofport')).trim());
      return n > 0 ? n : undefined;
    }, 60_000);
    const mtu = Number((await swA.vsctl('get', 'Interface', `vif${vm1.ofport}`, 'mtu')).trim());
    const tunnels = new Map<string, TunnelPort>([['hv2', { ofport, type: 'geneve', remoteIp }]]);
    return { tunnels, localnetPatches: new Map([['physnet', patch]]), vifMtus: new Map([[vm1.name, mtu]]) };
  };
  const first = await realView();
  t.equal(first.vifMtus?.get('vm1'), 1500, 'the dummy interface reports the MTU of 1500 it starts with');
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, [vm1], swA, first);
  // The Geneve option the flows to hv2 carry, mapped as the real chassis maps it.
  await swB.ofctl('add-tlv-map', '{class=0x102,type=0x80,len=4}->tun_metadata0');
  const agent = follower.agent;

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    follower.setView({ ...follower.localView, ...(await realView()) });
    const { real: a, ours: b, ms } = await converge(follower,
      () => ch.reconcile([...agent.table.flows()].map(([, f]) => f).filter((f) => TABLES.has(f.table)), { groups: [] }),
      () => Promise.all([dump(swA), dump(swB)]), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    t.same(texts([...agent.table.flows()].map(([, f]) => f)), texts([...follower.fresh().table.flows()].map(([, f]) => f)), `${name}: the incremental engine equals a fresh one`);
  };
  /** The eight path MTU flows, comparing with `len` (the MTU less the tunnels' overhead). */
  const pmtu = (len: number) => (a: readonly string[]): boolean => a.filter((l) => l.includes(`check_pkt_larger(${len})`)).length === 4
    && a.filter((l) => / table=38, priority=100,/.test(l)).length === 4;
  const noPmtu = (a: readonly string[]): boolean => !a.some((l) => / table=3[78], priority=100,/.test(l));
  const tunnelled = (a: readonly string[]): boolean => a.some((l) => / table=39, priority=110,/.test(l));

  // 1500 less Geneve's 38 bytes and an IPv4 header's 20: 1442; the ICMP error says 1442 - 18.
  await step('MTU 1500', (a) => pmtu(1442)(a) && tunnelled(a));
  await swA.vsctl('set', 'Interface', `vif${vm1.ofport}`, 'mtu_request=1400');
  await until('the switch reports MTU 1400', async () => ((await swA.vsctl('get', 'Interface', `vif${vm1.ofport}`, 'mtu')).trim() === '1400' ? true : undefined));
  await step('MTU 1400', pmtu(1342));
  await sbctl('clear', 'Port_Binding', 'vm1', 'additional_chassis');
  await nbctl('--wait=hv', 'sync');
  await step('hv2 left vm1: no multichassis port', (a) => noPmtu(a) && !tunnelled(a));
  await sbctl('set', 'Port_Binding', 'vm1', `additional_chassis=${hv2}`);
  await nbctl('--wait=hv', 'sync');
  await step('hv2 back', pmtu(1342));
  // The tunnel to hv2 over IPv6: an IPv6 header's 40 bytes instead of 20.
  const encap = (await sbctl('--bare', '--columns=_uuid', 'find', 'Encap', 'chassis_name=hv2')).trim();
  await sbctl('set', 'Encap', encap, 'ip="fd00::2"');
  await nbctl('--wait=hv', 'sync');
  await step('hv2 over IPv6', pmtu(1322));
  // The migration goes the other way: hv2 first, hv1 an additional chassis. hv1 moves into the
  // set (and leaves the main chassis empty); hv2 takes the port as its main chassis.
  await nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv2,hv1');
  const hv1 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1')).trim();
  await until(() => `ovn-controller takes vm1 as its additional chassis (${log()})`, async () => (
    (await sbctl('--bare', '--columns=additional_chassis', 'find', 'Port_Binding', 'logical_port=vm1')).split(/\s+/).includes(hv1) ? true : undefined), 60_000);
  await sbctl('set', 'Port_Binding', 'vm1', `chassis=${hv2}`, `additional_chassis=${hv1}`);
  await nbctl('--wait=hv', 'sync');
  await step('vm1 bound on hv2, hv1 additional', pmtu(1322));
}

t.test('a multichassis port\'s path MTU flows are the real ovn-controller\'s, as the MTU, the chassis and the tunnel change', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
