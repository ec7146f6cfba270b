// A gateway router port's HA failover by BFD, end to end: three chassis on one underlay (two
// gateway chassis and a hypervisor whose VM's switch reaches the router), each with its own
// ovs-vswitchd and agent. The agents run BFD on the tunnels between the group's members and the
// hypervisor, as ovn-controller does; when the active gateway's host dies (its agent killed,
// its switch stopped) without unregistering, the next member by priority claims the
// chassisredirect port once its BFD session to the dead one is down, with nobody touching the
// database.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { clusterWithAgents, e2eSkip as skip, linkSwitchToRouter, nbctlOf, sbctlOf, untilLogged } from '../helpers/agent-e2e.js';
import type { ChassisHost } from '../helpers/chassis-host.js';
import { stopPid } from '../helpers/process.js';

const run = promisify(execFile);

async function boundTo(sbctl: (...a: string[]) => Promise<string>, port: string): Promise<string> {
  const uuid = await sbctl('--bare', '--columns=chassis', 'find', 'Port_Binding', `logical_port=${port}`);
  return uuid === '' ? '' : sbctl('--bare', '--columns=name', 'list', 'Chassis', uuid);
}

/** The chassis at the far end of `ch`'s tunnels whose Interface has BFD enabled and up. */
async function bfdUpTo(ch: ChassisHost): Promise<string[]> {
  const out: string[] = [];
  const ports = (await ch.ovs.vsctl('--bare', '--columns=name', 'find', 'Port', 'external_ids:ovn-chassis-id!=""')).split('\n').filter((l) => l.trim() !== '');
  for (const port of ports) {
    const id = (await ch.ovs.vsctl('get', 'Port', port, 'external_ids:ovn-chassis-id')).trim().replace(/"/g, '');
    const enabled = (await ch.ovs.vsctl('--if-exists', 'get', 'Interface', port, 'bfd:enable')).trim().replace(/"/g, '');
    const state = (await ch.ovs.vsctl('--if-exists', 'get', 'Interface', port, 'bfd_status:state')).trim().replace(/"/g, '');
    if (enabled === 'true' && state === 'up') out.push(id.slice(0, id.lastIndexOf('@')));
  }
  return out.sort();
}

t.test('a gateway port fails over by BFD when the active gateway chassis dies', { skip }, async (t) => {
  const { env, hosts, agents } = await clusterWithAgents(t, '172.30.29', ['gw1', 'gw2', 'hv1']);
  const [gw1, gw2, hv1] = hosts;
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  await nbctl('ls-add', 'ls1');
  await nbctl('lsp-add', 'ls1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:29:00:05 10.29.0.5');
  await nbctl('lr-add', 'lr0');
  await linkSwitchToRouter(nbctl, 'ls1', 'lr0', 'lrp-ls1', '00:00:00:29:ff:01', '10.29.0.1/24');
  await nbctl('lrp-add', 'lr0', 'lrp-pub', '00:00:00:29:ff:02', '172.16.29.1/24');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'gw1', '20');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'gw2', '10');
  // The BFD timers a CMS sets in NB_Global's options (northd copies them to SB_Global's).
  await nbctl('set', 'NB_Global', '.', 'options:bfd-min-rx=300', 'options:bfd-min-tx=300', 'options:bfd-mult=3');
  await hv1.addVm('vm1', { mac: '0a:00:00:29:00:05', cidr: '10.29.0.5/24', gateway: '10.29.0.1' });
  const at = (name: string, what: string): Promise<true> =>
    untilLogged(what, async () => ((await boundTo(sbctl, 'cr-lrp-pub')) === name ? true : undefined), 60_000, agents);

  await untilLogged('vm1 bound to hv1, so hv1 uses the gateway (ref_chassis)', async () =>
    ((await sbctl('--bare', '--columns=ref_chassis', 'find', 'HA_Chassis_Group', 'name=lrp-pub')) !== '' ? true : undefined), 60_000, agents);
  await at('gw1', 'cr-lrp-pub bound to gw1, the higher priority');
  // BFD between the members, and between each member and the hypervisor that uses the group.
  const want = { gw1: ['gw2', 'hv1'], gw2: ['gw1', 'hv1'], hv1: ['gw1', 'gw2'] };
  for (const ch of [gw1, gw2, hv1]) {
    await untilLogged(`${ch.name}'s BFD sessions up`, async () => (JSON.stringify(await bfdUpTo(ch)) === JSON.stringify(want[ch.name as keyof typeof want]) ? true : undefined), 60_000, agents);
  }
  t.pass('BFD is enabled and up on the tunnels between the members, and between them and hv1');
  const gw2ToGw1 = (await gw2.ovs.vsctl('--bare', '--columns=name', 'find', 'Port', 'external_ids:ovn-chassis-id="gw1@172.30.29.1"')).trim();
  const bfdOf = async (key: string): Promise<string> => (await gw2.ovs.vsctl('get', 'Interface', gw2ToGw1, `bfd:${key}`)).trim().replace(/"/g, '');
  t.same([await bfdOf('min_rx'), await bfdOf('min_tx'), await bfdOf('mult'), await bfdOf('check_tnl_key')], ['300', '300', '3', 'true'], 'with the timers of NB_Global\'s options, and check_tnl_key as ovn-controller sets it');
  t.equal(await boundTo(sbctl, 'cr-lrp-pub'), 'gw1', 'with every session up, the highest priority stays active');
  // hv1 sends to the gateway port through an active-backup bundle of gw1's and gw2's tunnels,
  // in priority order, so Open vSwitch itself turns to gw2 when gw1's BFD session goes down.
  const tunnelOfport = async (to: string): Promise<string> => {
    const port = (await hv1.ovs.vsctl('--bare', '--columns=name', 'find', 'Port', `external_ids:ovn-chassis-id="${to}@172.30.29.${to === 'gw1' ? 1 : 2}"`)).trim();
    return (await hv1.ovs.vsctl('get', 'Interface', port, 'ofport')).trim();
  };
  const table39 = (await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-flows', `unix:${join(hv1.ovs.dir, 'br-int.mgmt')}`, 'table=39'])).stdout;
  t.match(table39, new RegExp(`bundle\\(eth_src,0,active_backup,ofport,members:${await tunnelOfport('gw1')},${await tunnelOfport('gw2')}\\)`),
    'hv1 reaches the gateway port through an active-backup bundle: gw1\'s tunnel, then gw2\'s');

  // gw1's host dies: its agent is killed (no cleanup: its Chassis stays registered) and its
  // switch stops, so its BFD sessions go down.
  await stopPid(agents[0].pid, (argv) => argv.includes('agent'), 'SIGKILL');
  await gw1.stop();
  await at('gw2', 'cr-lrp-pub fails over to gw2 once its BFD session to gw1 is down');
  t.pass('the next member by priority took the port over');
  t.equal(await sbctl('--bare', '--columns=name', 'find', 'Chassis', 'name=gw1'), 'gw1', 'with gw1 still registered: BFD, not the database, moved it');
  t.same(await bfdUpTo(gw2), ['hv1'], 'gw2 keeps its session with hv1');
});
