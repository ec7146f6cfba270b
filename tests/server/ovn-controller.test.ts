// The real ovn-controller 23.03 as a chassis of an ovnts cluster: it connects to the
// OVN_Southbound door, registers its Chassis, Encap and Chassis_Private, claims the port whose
// OVS interface carries its iface-id, compiles our logical flows into its bridge, and
// acknowledges nb_cfg, so `--wait=hv` returns once the chassis caught up; it claims the
// chassisredirect port of a distributed gateway port whose gateway chassis it is, and probes a
// health-checked backend and writes its Service_Monitor.status, and with IGMP snooping on its
// switch it writes the group a report joined into IGMP_Group, and as the switch's querier sends
// the IGMP and MLD general queries our agent's querier sends, byte for byte. Method: `ovnts up`
// (real processes), a real ovs-vswitchd with dummy devices (nothing on the host's network),
// the real ovn-controller; everything stopped by pid.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { igmpQueryPacket, mldQueryPacket } from '../../agent/pinctrl/igmp-querier.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { ovnts, until, upCluster } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);


t.test('a real ovn-controller registers, claims a port, installs flows and acknowledges nb_cfg', { skip: ovsSwitchInstalled() ? false : 'Open vSwitch is not installed' }, async (t) => {
  const env = await upCluster(t, join(testdirAfterTeardowns(t), 'c'));
  const nb = env.nbGrpc.join(',');
  const nbctl = (...args: string[]): ReturnType<typeof ovnts> => ovnts('nbctl', `--endpoints=${nb}`, ...args);
  for (const args of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1']]) t.equal((await nbctl(...args)).code, 0);

  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', `external_ids:ovn-remote=${env.sbOvsdb.join(',')}`,
    'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev',
    // It installs no flow unless SB_Global's northd_internal_version is its own.
    'external_ids:ovn-match-northd-version=true');
  const ovnEnv = { ...sw.env, OVN_RUNDIR: sw.dir, OVN_LOGDIR: sw.dir, OVN_DBDIR: sw.dir };
  await run('ovn-controller', [`unix:${join(sw.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${join(sw.dir, 'ovn-controller.pid')}`, `--log-file=${join(sw.dir, 'ovn-controller.log')}`], { env: ovnEnv });
  const controllerPid = Number(readFileSync(join(sw.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(controllerPid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  const log = (): string => (existsSync(join(sw.dir, 'ovn-controller.log')) ? readFileSync(join(sw.dir, 'ovn-controller.log'), 'utf8').slice(-2000) : '');
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');

  await until(() => `vm1 up (ovn-controller log: ${log()})`, async () => ((await nbctl('lsp-get-up', 'vm1')).stdout === 'up\n' ? true : undefined));
  t.pass('the NB sees vm1 up once ovn-controller claimed it');
  const client = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => client.close());
  const sb = async (table: string): Promise<Record<string, unknown>[]> => (await client.list(table, [], { db: 'OVN_Southbound' })).rows;
  const [chassis] = await sb('Chassis');
  t.match(chassis, { name: 'hv1' }, 'it registered its Chassis');
  t.match(await sb('Encap'), [{ type: 'geneve', ip: '127.0.0.1', chassis_name: 'hv1' }]);
  t.match(await sb('Chassis_Private'), [{ name: 'hv1' }]);
  const pb = (await sb('Port_Binding')).find((r) => r.logical_port === 'vm1');
  t.same(pb?.chassis, chassis?._uuid, 'and bound vm1 to itself');

  const flows = await until(() => `flows in br-int (log: ${log()})`, async () => {
    const dump = await sw.ofctl('dump-flows');
    return dump.includes('dl_dst=00:00:00:00:00:01') ? dump : undefined;
  });
  t.ok(flows.split('\n').length > 50, `it compiled our logical flows into OpenFlow (${flows.split('\n').length} flows)`);
  const fullLog = readFileSync(join(sw.dir, 'ovn-controller.log'), 'utf8');
  t.notMatch(fullLog, /error parsing match/, `every logical flow parsed (SB_Global carries svc_monitor_mac): ${(/.*error parsing.*/.exec(fullLog) ?? [''])[0]}`);
  // The options ovn-northd writes: the MAC prefix, the highest datapath key, its version (which
  // this ovn-controller, being 23.03.1, would accept under ovn-match-northd-version) and a
  // unicast, locally administered service monitor MAC.
  t.match((await sb('SB_Global'))[0]?.options, ['map', [
    ['mac_prefix', /^[0-9a-f]{2}(:[0-9a-f]{2}){2}$/], ['max_tunid', '16711680'], ['northd_internal_version', '23.03.1-20.27.0-70.6'],
    ['svc_monitor_mac', /^[0-9a-f]{1}[26ae](:[0-9a-f]{2}){5}$/],
  ]]);

  // --wait=hv: nb_cfg goes up, and only the chassis' acknowledgement in Chassis_Private moves hv_cfg.
  const waited = await nbctl('--wait=hv', 'lsp-add', 'sw0', 'vm2');
  t.equal(waited.code, 0, `--wait=hv returns once the real chassis acknowledged: ${waited.stderr}`);
  const [global] = (await client.list('NB_Global')).rows;
  t.ok(typeof global?.hv_cfg === 'number' && global.hv_cfg === global.nb_cfg && (global.nb_cfg as number) >= 1, `hv_cfg ${String(global?.hv_cfg)} caught up with nb_cfg ${String(global?.nb_cfg)}`);
  const [priv] = await sb('Chassis_Private');
  t.ok((priv?.nb_cfg as number) >= (global?.nb_cfg as number), 'because the chassis acknowledged it');

  // A distributed gateway port on hv1 (built with the real ovn-nbctl through the NB door): our
  // northd names hv1's Chassis in the group's HA_Chassis (ovn-controller reads only that
  // column), so ovn-controller claims the chassisredirect port.
  await run('ovn-nbctl', [`--db=${env.nbOvsdb.join(',')}`, '--timeout=30', 'lr-add', 'lr0',
    '--', 'lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.254/24',
    '--', 'lsp-add', 'sw0', 'sw0-lr0', '--', 'lsp-set-type', 'sw0-lr0', 'router', '--', 'lsp-set-addresses', 'sw0-lr0', 'router',
    '--', 'lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0',
    '--', 'lrp-add', 'lr0', 'lr0-ext', '00:00:00:00:ff:02', '172.16.0.1/24', '--', 'lrp-set-gateway-chassis', 'lr0-ext', 'hv1', '10']);
  const [member] = await sb('HA_Chassis');
  t.same(member?.chassis, chassis?._uuid, 'the HA_Chassis of the gateway port names hv1\'s Chassis');
  const cr = await until(() => `cr-lr0-ext bound (ovn-controller log: ${log()})`, async () => {
    const row = (await sb('Port_Binding')).find((r) => r.logical_port === 'cr-lr0-ext');
    return row !== undefined && JSON.stringify(row.chassis) === JSON.stringify(chassis?._uuid) ? row : undefined;
  });
  t.equal(cr.type, 'chassisredirect', 'ovn-controller claimed the chassisredirect port of the gateway port');
  const [group] = await sb('HA_Chassis_Group');
  t.same(group?.ref_chassis, ['set', []], 'a group of one member has no ref_chassis (as in 23.03)');

  // A health-checked load balancer whose backend is vm1 (made with the real ovn-nbctl through
  // the NB door): ovn-controller probes it from svc_monitor_mac, nothing answers on the dummy
  // interface, it writes Service_Monitor.status "offline" through the SB door, and northd takes
  // the backend out of ct_lb_mark (the VIP, left without one, drops).
  const ovnNbctl = async (...args: string[]): Promise<void> => {
    const { stderr } = await run('ovn-nbctl', [`--db=${env.nbOvsdb.join(',')}`, '--timeout=20', ...args], { timeout: 30_000 });
    t.equal(stderr, '', `ovn-nbctl ${args.join(' ')}`);
  };
  await ovnNbctl('lb-add', 'lb0', '10.0.0.100:80', '10.0.0.1:80', '--', 'ls-lb-add', 'sw0', 'lb0');
  await ovnNbctl('--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', 'vip="10.0.0.100:80"', 'options:interval=1', 'options:timeout=1', 'options:failure_count=1',
    '--', 'add', 'Load_Balancer', 'lb0', 'health_check', '@hc');
  await ovnNbctl('set', 'Load_Balancer', 'lb0', 'ip_port_mappings:"10.0.0.1"="vm1:10.0.0.254"');
  const lbActions = async (): Promise<string | undefined> =>
    ((await sb('Logical_Flow')).find((f) => String(f.match).startsWith('ct.new && ip4.dst == 10.0.0.100') && (f.external_ids as ['map', [string, string][]])[1].some(([k, v]) => k === 'stage-name' && v === 'ls_in_lb'))?.actions as string | undefined);
  t.equal(await until('the load balancer flow', lbActions), 'reg0[1] = 0; ct_lb_mark(backends=10.0.0.1:80);', 'monitored, status unknown: the backend is chosen');
  const monitor = await until(() => `ovn-controller writes the status (log: ${log()})`, async () => (await sb('Service_Monitor')).find((r) => r.logical_port === 'vm1' && r.status === 'offline'));
  t.match(monitor, { ip: '10.0.0.1', port: 80, src_ip: '10.0.0.254', status: 'offline' }, 'the real ovn-controller wrote status offline through the SB door');
  t.equal(await until('the backend out of ct_lb_mark', async () => ((await lbActions()) === 'drop;' ? 'drop;' : undefined)), 'drop;', 'and the VIP drops: no backend is online');

  // IGMP snooping: sw0 snoops; an IGMPv2 report for 239.1.1.1 arrives on vif1 (vm1). The real
  // ovn-controller learns it and writes an IGMP_Group row through the SB door (the cluster
  // applies version 3, which lets chassis write it); our northd makes the group
  // 239.1.1.1 of vm1 and its flow.
  t.equal((await nbctl('set', 'Logical_Switch', 'sw0', 'other_config:mcast_snoop=true')).code, 0);
  await until('IP_Multicast enabled for sw0', async () => ((await sb('IP_Multicast')).some((r) => r.enabled === true) ? true : undefined));
  const report = igmpV2Report('00:00:00:00:00:01', '10.0.0.1', '239.1.1.1');
  const learned = await until(() => `an IGMP_Group row (ovn-controller log: ${log()})`, async () => {
    await sw.appctl('netdev-dummy/receive', 'vif1', report);
    return (await sb('IGMP_Group')).find((r) => r.address === '239.1.1.1');
  });
  t.same(learned.chassis, chassis?._uuid, 'ovn-controller wrote the group it learned, naming its Chassis');
  t.same(learned.ports, pb?._uuid, 'with vm1, the port the report came from');
  const mc = await until('the learned Multicast_Group', async () => (await sb('Multicast_Group')).find((r) => r.name === '239.1.1.1'));
  t.same(mc.ports, pb?._uuid, 'northd made the group of vm1');
  t.ok((mc.tunnel_key as number) >= 32773, `with a learned group's key (${String(mc.tunnel_key)})`);
  t.ok((await sb('Logical_Flow')).some((f) => f.priority === 90 && String(f.match).includes('ip4.dst == 239.1.1.1')), 'and its ls_in_l2_lkup flow');

  // The querier: with sw0's querier addresses set and a 1 s interval, the real ovn-controller
  // floods an IGMP and an MLD general query to vm1; netdev-dummy writes what vif1 transmits to a
  // pcap file. Our agent's querier builds the same bytes.
  const pcap = join(sw.dir, 'vif1-tx.pcap');
  await sw.vsctl('set', 'interface', 'vif1', `options:tx_pcap=${pcap}`);
  t.equal((await nbctl('set', 'Logical_Switch', 'sw0', 'other_config:mcast_query_interval=1', 'other_config:mcast_eth_src="00:00:00:00:99:01"',
    'other_config:mcast_ip4_src="10.0.0.253"', 'other_config:mcast_ip6_src="fe80::99:1"')).code, 0);
  const queries = await until(() => `both queries on vif1 (ovn-controller log: ${log()})`, async () => {
    const frames = existsSync(pcap) ? pcapFrames(readFileSync(pcap)) : [];
    const igmp = frames.find((f) => f.length >= 34 && f.readUInt16BE(12) === 0x0800 && f[23] === 2);
    const mld = frames.find((f) => f.length >= 63 && f.readUInt16BE(12) === 0x86dd && f[20] === 0 && f[62] === 130);
    return igmp !== undefined && mld !== undefined ? { igmp, mld } : undefined;
  }, 20_000);
  t.equal(queries.mld.toString('hex'), mldQueryPacket({ ethSrc: '00:00:00:00:99:01', ip6Src: 0xfe80000000000000000000000099_0001n, maxRespS: 1 }).toString('hex'),
    'ovn-controller\'s MLD query is our querier\'s, byte for byte');
  t.equal(queries.igmp.toString('hex'), igmpQueryPacket({ ethSrc: '00:00:00:00:99:01', ip4Src: 0x0a0000fd, maxRespS: 1 }).toString('hex'),
    'and so is its IGMP query');
});

/** The frames of a pcap file (classic format, either byte order), as netdev-dummy's tx_pcap writes it; a record cut short ends the list. */
function pcapFrames(b: Buffer): Buffer[] {
  if (b.length < 24) return [];
  const le = b.readUInt32LE(0) === 0xa1b2c3d4;
  const u32 = (at: number): number => (le ? b.readUInt32LE(at) : b.readUInt32BE(at));
  const out: Buffer[] = [];
  for (let at = 24; at + 16 <= b.length && out.length < 10_000;) {
    const len = u32(at + 8);
    if (at + 16 + len > b.length) break;
    out.push(b.subarray(at + 16, at + 16 + len));
    at += 16 + len;
  }
  return out;
}

/** An IGMPv2 membership report from (mac, ip) for `group`, as the hex ovs-appctl netdev-dummy/receive takes. */
function igmpV2Report(mac: string, ip: string, group: string): string {
  const octets = (a: string): number[] => a.split('.').map(Number);
  const sum = (b: number[]): number => {
    let s = 0;
    for (let i = 0; i < b.length; i += 2) s += ((b[i] as number) << 8) + (b[i + 1] ?? 0);
    while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
    return ~s & 0xffff;
  };
  const g = octets(group);
  const igmp = [0x16, 0, 0, 0, ...g];
  const c = sum(igmp);
  igmp[2] = c >> 8;
  igmp[3] = c & 0xff;
  // IPv4 with the router alert option (RFC 2236), TTL 1, protocol 2.
  const ipHeader = [0x46, 0, 0, 32, 0, 0, 0x40, 0, 1, 2, 0, 0, ...octets(ip), ...g, 0x94, 0x04, 0, 0];
  const h = sum(ipHeader);
  ipHeader[10] = h >> 8;
  ipHeader[11] = h & 0xff;
  const eth = [0x01, 0x00, 0x5e, (g[1] as number) & 0x7f, g[2] as number, g[3] as number, ...mac.split(':').map((x) => Number.parseInt(x, 16)), 0x08, 0x00];
  return Buffer.from([...eth, ...ipHeader, ...igmp]).toString('hex');
}
