// Goal: for the same Southbound, our physical flows are the ones the real ovn-controller 23.03
// installs: tables 0 (VIFs, localnet, tunnels), 37-41 (output, loopback), 64-65 (hairpin,
// delivery, patch ports), 66-67 and 71-72 (MAC bindings, FDB), 73-75 (port security). Method: an ovnts cluster (real
// processes) serves the SB; a real ovn-controller as chassis hv1 on a real ovs-vswitchd binds
// three VIFs, two containers (one on its parent's switch, one on another) and a localport, tunnels to a second chassis hv2 (registered through
// the SB door, owning a third port), bridges a localnet network, routes through a router, has
// two ports bound on hv2 too as an additional chassis (a live migration: one on the tunnelled
// switch, one on the localnet one, whose traffic to a port of hv2 is tunnelled rather than
// bridged, and packets too big for that tunnel answered with ICMP errors), and knows a MAC
// binding and an FDB entry; we read the same SB rows, the same LocalView (ofports and VIF MTUs
// from OVS) and its ct zones (br-int external_ids), compute ours,
// and compare flow by flow with what ovn-controller installed (dumped over OpenFlow), in
// OpenFlow's canonical wire form. The one spelling our codec cannot produce (OVN's 16-bit
// NXM_OF_IN_PORT load in the hairpin) is rewritten to ours on their side before comparing.
// A second case does the same with hv1 on ovn-encap-type=vxlan and every other chassis on VXLAN:
// ports and multicast groups (32768, 32769, 32772, 32773) reached over VXLAN, a port key of
// 2047, the HA bundle of a gateway port to two chassis, a vtep port behind a VTEP gateway (a ramp
// switch), and table 0's entries from VXLAN tunnels.

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { LocalView, TunnelPort } from '../../agent/local-view.js';
import { decodeActions, encodeActions } from '../../agent/openflow/actions.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import { flowKey } from '../../agent/openflow/reconcile.js';
import type { FlowSpec, OfAction } from '../../agent/openflow/types.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import { linkSwitchToRouter } from '../helpers/agent-e2e.js';
import { until, upCluster, type UpEnv } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { stopPid } from '../helpers/process.js';
import { readStoredSb } from '../helpers/read-sb.js';
import { parseEndpoint } from '../../ovsdb/jsonrpc-client.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
const PHYSICAL_TABLES = new Set([0, 37, 38, 39, 40, 41, 64, 65, 66, 67, 71, 72, 73, 74, 75]);

function ovnInstalled(): boolean {
  return ovsSwitchInstalled() && ['/usr/bin/ovn-controller', '/usr/bin/ovn-nbctl', '/usr/bin/ovn-sbctl'].every((p) => existsSync(p));
}

/** OVN's spellings our codec has no names for, rewritten into ours: the hairpin's 16-bit
 *  in_port (see physical.ts) and mod_vlan_vid (OXM VLAN_VID: VID and CFI bits of vlan_tci). */
function normalizeHairpin(actions: readonly OfAction[]): OfAction[] {
  const out: OfAction[] = [];
  const all = { field: 'in_port', start: 0, end: 31 } as const;
  const reg0 = { field: 'reg0', start: 0, end: 31 } as const;
  for (const a of actions) {
    if (a.kind === 'push' && a.src.field === 'in_port') out.push({ kind: 'push', src: all });
    else if (a.kind === 'pop' && a.dst.field === 'in_port') out.push({ kind: 'pop', dst: all });
    else if (a.kind === 'set_field' && a.field === 'in_port' && a.value === 0xffffn) {
      out.push({ kind: 'push', src: reg0 }, { kind: 'set_field', field: 'reg0', value: 0xffffffffn }, { kind: 'move', src: reg0, dst: all }, { kind: 'pop', dst: reg0 });
    } else if (a.kind === 'set_field' && a.field === 'vlan_vid') {
      out.push({ kind: 'set_field', field: 'vlan_tci', value: a.value, mask: 0x1fffn });
    } else if (a.kind === 'clone') out.push({ kind: 'clone', actions: normalizeHairpin(a.actions) });
    else out.push(a);
  }
  return out;
}

/** hv1: a real ovn-controller on its own ovs-vswitchd with `bridges` (netdev) made first, and
 *  external_ids as given besides system-id hv1, the cluster's SB door, encap IP 127.0.0.1 and a
 *  netdev integration bridge; stopped by pid with t. log() is the tail of its log. */
async function startOvnController(t: Test, sbdb: string, externalIds: readonly string[], bridges: readonly string[] = []): Promise<{ sw: OvsSwitch; log: () => string }> {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  for (const br of bridges) await sw.vsctl('add-br', br, '--', 'set', 'bridge', br, 'datapath_type=netdev');
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', `external_ids:ovn-remote=${sbdb}`,
    'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev', ...externalIds);
  const ovnEnv = { ...sw.env, OVN_RUNDIR: sw.dir, OVN_LOGDIR: sw.dir, OVN_DBDIR: sw.dir };
  const logFile = join(sw.dir, 'ovn-controller.log');
  await run('ovn-controller', [`unix:${join(sw.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off',
    `--pidfile=${join(sw.dir, 'ovn-controller.pid')}`, `--log-file=${logFile}`], { env: ovnEnv });
  const controllerPid = Number(readFileSync(join(sw.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(controllerPid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  return { sw, log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-1500) : '') };
}

/** What compareWithOvnController read and found, for a case's own checks. */
interface Compared {
  readonly sb: SbRowChange[];
  readonly view: LocalView;
  /** ovn-controller's physical flows, by flow key. */
  readonly theirs: ReadonlyMap<string, FlowSpec>;
}

/**
 * Once ovn-controller's flows are stable: reads the SB, the LocalView and ct zones from hv1's
 * switch, computes our flows from them, and checks that the physical tables are ovn-controller's
 * flow for flow and that the same logical flows are installed.
 */
async function compareWithOvnController(t: Test, env: UpEnv, sw: OvsSwitch, log: () => string): Promise<Compared> {
  // Let ovn-controller settle: the same flows twice, a second apart.
  let last = '';
  await until(() => `stable flows (log: ${log()})`, async () => {
    const dump = await sw.ofctl('dump-flows', '--no-stats');
    const same = dump === last && dump.includes('output:') ? true : undefined;
    last = dump;
    await new Promise((r) => setTimeout(r, 1000));
    return same;
  }, 60_000);

  // The same inputs for our side: SB rows, LocalView, ct zones, Geneve field.
  const sb = await readStoredSb(parseEndpoint(env.sbOvsdb[0] as string));
  // mtu is an optional integer: a number, or ["set", []] when the interface reports none.
  type IfRow = { name: string; ofport: number; type: string; external_ids: [string, [string, string][]]; options: [string, [string, string][]]; mtu: unknown };
  const ifaces = (JSON.parse(await sw.vsctl('--format=json', '--columns=name,ofport,type,external_ids,options,mtu', 'list', 'Interface')) as { data: unknown[][] }).data
    .map(([name, ofport, type, ext, opts, mtu]) => ({ name, ofport, type, external_ids: ext, options: opts, mtu }) as IfRow);
  const mapOf = (m: [string, [string, string][]]): Map<string, string> => new Map(m[1]);
  // ovn-controller marks its tunnel and patch ports on the Port row (ovn-chassis-id,
  // ovn-localnet-port); each such port has one interface of the same name.
  const portExt = new Map((JSON.parse(await sw.vsctl('--format=json', '--columns=name,external_ids', 'list', 'Port')) as { data: [string, [string, [string, string][]]][] }).data
    .map(([name, ext]) => [name, mapOf(ext)] as const));
  const onBrInt = new Set((await sw.vsctl('list-ifaces', 'br-int')).split('\n').filter(Boolean));
  const vifs = new Map<string, number>();
  const vifMtus = new Map<string, number>();
  const tunnels = new Map<string, TunnelPort>();
  const localnetPatches = new Map<string, number>();
  const pbs = sb.filter((c) => c.table === 'Port_Binding').map((c) => c.row as unknown as { logical_port: string; options: ReadonlyMap<string, string> });
  for (const i of ifaces) {
    const ext = new Map([...mapOf(i.external_ids), ...(portExt.get(i.name) ?? [])]);
    const iface = ext.get('iface-id');
    if (iface !== undefined) vifs.set(iface, i.ofport);
    if (iface !== undefined && typeof i.mtu === 'number' && i.mtu > 0) vifMtus.set(iface, i.mtu);
    const chassisId = ext.get('ovn-chassis-id');
    if ((i.type === 'geneve' || i.type === 'vxlan') && chassisId !== undefined) tunnels.set(chassisId.split('@')[0] as string, { ofport: i.ofport, type: i.type, remoteIp: mapOf(i.options).get('remote_ip') ?? '' });
    const ln = ext.get('ovn-localnet-port');
    const net = ln === undefined ? undefined : pbs.find((p) => p.logical_port === ln)?.options.get('network_name');
    if (net !== undefined && onBrInt.has(i.name)) localnetPatches.set(net, i.ofport);
  }
  const view: LocalView = { chassis: 'hv1', vifs, vifMtus, tunnels, localnetPatches };
  const brExt = (JSON.parse(await sw.vsctl('--format=json', '--columns=external_ids', 'list', 'Bridge', 'br-int')) as { data: [[string, [string, string][]]][] }).data[0]?.[0];
  const ctZones = new Map<string, number>();
  for (const [k, v] of brExt?.[1] ?? []) if (k.startsWith('ct-zone-')) ctZones.set(k.slice('ct-zone-'.length), Number(v));
  const tlv = /0x102\s+0x80\s+4\s+(tun_metadata\d+)/.exec(await sw.ofctl('dump-tlv-map'))?.[1] ?? 'tun_metadata0';

  // ovn-controller reads the datapath's capabilities; OVS 3.1's userspace datapath has ct_zero_snat.
  const ctZeroSnat = (await sw.vsctl('--bare', '--columns=capabilities', 'list', 'Datapath')).includes('ct_zero_snat=true');
  const ours = new DesiredFlows({ ctZones, geneveField: tlv, ctZeroSnat });
  ours.update({ reset: true, fromRevision: 0, toRevision: 1, changes: sb }, view);
  t.same([...ours.sourceErrors().values()], [], 'every logical flow compiled');
  t.same(new Map([...ours.ctZones()].filter(([k]) => ctZones.has(k))), ctZones, 'our zone users and zones are ovn-controller\'s');

  const ch = await OfChannel.connect({ target: sw.mgmtTarget });
  t.teardown(() => ch.close());
  const theirs = new Map<string, FlowSpec>();
  for (const f of await ch.dumpFlows()) {
    if (!PHYSICAL_TABLES.has(f.table)) continue;
    t.ok(Array.isArray(f.actions), `their flow in table ${f.table} decodes`);
    theirs.set(flowKey(f.table, f.priority, f.match), { table: f.table, priority: f.priority, match: f.match, cookie: f.cookie, actions: normalizeHairpin(f.actions as OfAction[]) });
  }
  const mine = new Map([...ours.table.flows()].filter(([, f]) => PHYSICAL_TABLES.has(f.table)));
  const missing: string[] = [];
  const extra: string[] = [];
  const different: string[] = [];
  for (const [k, f] of theirs) {
    const m = mine.get(k);
    if (m === undefined) missing.push(formatFlow(f, { cookie: true }));
    else if (m.cookie !== f.cookie || !encodeActions(m.actions).equals(encodeActions(f.actions))) {
      different.push(`theirs ${formatFlow(f, { cookie: true })}\n    ours ${formatFlow(m, { cookie: true })}`);
    }
  }
  for (const [k, f] of mine) if (!theirs.has(k)) extra.push(formatFlow(f, { cookie: true }));
  t.comment(`physical tables: ovn-controller ${theirs.size} flows, ours ${mine.size}`);
  for (const l of missing) t.comment(`missing: ${l}`);
  for (const l of extra) t.comment(`extra: ${l}`);
  for (const l of different) t.comment(`different:\n  ${l}`);
  t.same({ missing, extra, different }, { missing: [], extra: [], different: [] }, 'the physical flows are ovn-controller\'s, flow for flow');

  // The logical tables too: which logical flows a chassis installs depends on its local
  // datapaths and related ports. Conjunction ids are an allocation detail: compared as
  // placeholders.
  const logical = (table: number): boolean => (table >= 8 && table <= 36) || (table >= 42 && table <= 63);
  // The nested actions inside a controller() userdata are opaque to the switch; ours spell
  // fields with OXM headers where ovn-controller uses NXM ones (same meaning to the pinctrl
  // side). Compared: the opcode (the first 4 bytes).
  const canon = (f: FlowSpec): string => formatFlow(f, { cookie: true }).replace(/conj_id=\d+/g, 'conj_id=N').replace(/conjunction\(\d+,/g, 'conjunction(N,')
    .replace(/userdata=((?:[0-9a-f]{2}\.){3}[0-9a-f]{2})(?:\.[0-9a-f]{2})*/g, 'userdata=$1…');
  const theirLogical = new Map<string, number>();
  for (const f of await ch.dumpFlows()) {
    if (!logical(f.table) || !Array.isArray(f.actions)) continue;
    const k = canon({ table: f.table, priority: f.priority, match: f.match, cookie: f.cookie, actions: decodeActions(encodeActions(f.actions as OfAction[])) });
    theirLogical.set(k, (theirLogical.get(k) ?? 0) + 1);
  }
  const ourLogical = new Map<string, number>();
  for (const [, f] of ours.table.flows()) {
    if (!logical(f.table)) continue;
    const k = canon({ ...f, actions: decodeActions(encodeActions(f.actions)) });
    ourLogical.set(k, (ourLogical.get(k) ?? 0) + 1);
  }
  const onlyTheirs = [...theirLogical.keys()].filter((k) => !ourLogical.has(k));
  const onlyOurs = [...ourLogical.keys()].filter((k) => !theirLogical.has(k));
  t.comment(`logical tables: ovn-controller ${theirLogical.size} flows, ours ${ourLogical.size}`);
  for (const l of onlyTheirs) t.comment(`only theirs: ${l}`);
  for (const l of onlyOurs) t.comment(`only ours: ${l}`);
  t.same({ onlyTheirs, onlyOurs }, { onlyTheirs: [], onlyOurs: [] }, 'the same logical flows are installed, for the same datapaths and ports');
  return { sb, view, theirs };
}

/** A cluster (`ovnts up`) with the real ovn-nbctl and ovn-sbctl against its OVSDB doors. */
async function clusterWithTools(t: Test): Promise<{ env: UpEnv; sbdb: string; nbctl: Tool; sbctl: Tool }> {
  const env = await upCluster(t, join(testdirAfterTeardowns(t), 'c'));
  const nbdb = env.nbOvsdb.join(',');
  const sbdb = env.sbOvsdb.join(',');
  const nbctl: Tool = async (...a) => (await run('ovn-nbctl', [`--db=${nbdb}`, '--timeout=60', ...a])).stdout;
  const sbctl: Tool = async (...a) => (await run('ovn-sbctl', [`--db=${sbdb}`, '--timeout=60', ...a])).stdout;
  return { env, sbdb, nbctl, sbctl };
}

type Tool = (...args: string[]) => Promise<string>;

async function compare(t: Test): Promise<void> {
  const { env, sbdb, nbctl, sbctl } = await clusterWithTools(t);

  // sw0: vm1, vm2 on hv1, vm3 on hv2, lp (a localport); lr0 routes sw0 to pub; pub bridges physnet.
  await nbctl('ls-add', 'sw0');
  for (const [p, mac] of [['vm1', '01'], ['vm2', '02'], ['vm3', '03']] as const) {
    await nbctl('lsp-add', 'sw0', p, '--', 'lsp-set-addresses', p, `00:00:00:00:00:${mac} 10.0.0.${Number(mac)}`);
  }
  await nbctl('lsp-add', 'sw0', 'lp', '--', 'lsp-set-type', 'lp', 'localport', '--', 'lsp-set-addresses', 'lp', '00:00:00:00:00:aa 10.0.0.100');
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lrp-sw0', '00:00:00:00:ff:01', '10.0.0.254/24');
  await nbctl('lsp-add', 'sw0', 'rp-sw0', '--', 'lsp-set-type', 'rp-sw0', 'router', '--', 'lsp-set-addresses', 'rp-sw0', 'router',
    '--', 'lsp-set-options', 'rp-sw0', 'router-port=lrp-sw0');
  await nbctl('ls-add', 'pub');
  await nbctl('lsp-add', 'pub', 'ln-pub', '--', 'lsp-set-type', 'ln-pub', 'localnet', '--', 'lsp-set-addresses', 'ln-pub', 'unknown',
    '--', 'lsp-set-options', 'ln-pub', 'network_name=physnet');
  await nbctl('lrp-add', 'lr0', 'lrp-pub', '00:00:00:00:ff:02', '172.16.0.1/24');
  await nbctl('lsp-add', 'pub', 'rp-pub', '--', 'lsp-set-type', 'rp-pub', 'router', '--', 'lsp-set-addresses', 'rp-pub', 'router',
    '--', 'lsp-set-options', 'rp-pub', 'router-port=lrp-pub');
  // Live migrations: vm2 (sw0, tunnels) and vm4 (pub, a localnet network) are bound here and
  // on hv2 as an additional chassis; vm5 is on hv2, reached through the localnet but over the
  // tunnel from vm4.
  await nbctl('lsp-set-options', 'vm2', 'requested-chassis=hv1,hv2');
  await nbctl('lsp-add', 'pub', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:00:04 172.16.0.4', '--', 'lsp-set-options', 'vm4', 'requested-chassis=hv1,hv2');
  await nbctl('lsp-add', 'pub', 'vm5', '--', 'lsp-set-addresses', 'vm5', '00:00:00:00:00:05 172.16.0.5');
  // vm6 migrates to hv1 under activation-strategy=rarp: hv1 is its additional chassis, and keeps
  // the VM off the port until its RARP.
  await nbctl('lsp-add', 'sw0', 'vm6', '--', 'lsp-set-addresses', 'vm6', '00:00:00:00:00:06 10.0.0.6', '--', 'lsp-set-options', 'vm6', 'requested-chassis=hv2,hv1', 'activation-strategy=rarp');
  // A container in vm1 on VLAN 42; one in vm2 on VLAN 43 on another switch (a trunk subport:
  // only its parent_port brings it to the chassis).
  await nbctl('lsp-add', 'sw0', 'c1', 'vm1', '42', '--', 'lsp-set-addresses', 'c1', '00:00:00:00:00:c1 10.0.0.21');
  await nbctl('ls-add', 'sw1');
  await nbctl('lsp-add', 'sw1', 'c2', 'vm2', '43', '--', 'lsp-set-addresses', 'c2', '00:00:00:00:00:c2 10.1.0.22');
  // Port security: IPv4 and IPv6 addresses, a MAC alone, a subnet and a host in a subnet.
  await nbctl('lsp-set-port-security', 'vm1', '00:00:00:00:00:01 10.0.0.1 fd00::1');
  await nbctl('lsp-set-port-security', 'vm2', '00:00:00:00:00:02');
  await nbctl('lsp-set-port-security', 'c1', '00:00:00:00:00:c1 10.0.0.0/24 10.0.1.5/24 fd00:1::/64');
  await sbctl('chassis-add', 'hv2', 'geneve', '127.0.0.2');
  await until('vm3 in the SB', async () => ((await sbctl('--bare', '--columns=logical_port', 'find', 'Port_Binding', 'logical_port=vm3')).trim() === 'vm3' ? true : undefined));
  await sbctl('lsp-bind', 'vm3', 'hv2');
  await sbctl('lsp-bind', 'vm5', 'hv2');
  // What chassis learn: a MAC binding on the router's outside port, an FDB entry on sw0.
  const lr0 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Datapath_Binding', 'external_ids:name=lr0')).trim();
  await sbctl('create', 'MAC_Binding', 'logical_port=lrp-pub', 'ip=172.16.0.9', 'mac="0a:00:00:00:00:09"', `datapath=${lr0}`);
  await sbctl('create', 'MAC_Binding', 'logical_port=lrp-sw0', 'ip="fd00::9"', 'mac="0a:00:00:00:00:0a"', `datapath=${lr0}`);
  const sw0Key = (await sbctl('--bare', '--columns=tunnel_key', 'find', 'Datapath_Binding', 'external_ids:name=sw0')).trim();
  await sbctl('create', 'FDB', 'mac="0a:00:00:00:00:fd"', `dp_key=${sw0Key}`, 'port_key=2');

  const { sw, log } = await startOvnController(t, sbdb, ['external_ids:ovn-encap-type=geneve', 'external_ids:ovn-bridge-mappings=physnet:br-phys'], ['br-phys']);
  for (const [i, p] of [[1, 'vm1'], [2, 'vm2'], [3, 'lp'], [4, 'vm4'], [6, 'vm6']] as const) {
    await sw.vsctl('add-port', 'br-int', `vif${i}`, '--', 'set', 'interface', `vif${i}`, 'type=dummy', `external_ids:iface-id=${p}`);
  }
  for (const p of ['vm1', 'vm2', 'c1', 'c2', 'vm4']) {
    await until(() => `${p} up (ovn-controller log: ${log()})`, async () => ((await nbctl('lsp-get-up', p)).trim() === 'up' ? true : undefined), 60_000);
  }
  // hv2 takes vm2 and vm4 as their additional chassis, as its ovn-controller would.
  const hv2 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2')).trim();
  for (const p of ['vm2', 'vm4']) await sbctl('set', 'Port_Binding', p, `additional_chassis=${hv2}`);
  const hv1 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1')).trim();
  await until(() => `ovn-controller takes vm6 as its additional chassis (log: ${log()})`, async () => (
    (await sbctl('--bare', '--columns=additional_chassis', 'find', 'Port_Binding', 'logical_port=vm6')).trim() === hv1 ? true : undefined), 60_000);
  t.same((await sbctl('--bare', '--columns=requested_chassis', 'find', 'Port_Binding', 'logical_port=vm4')).trim(),
    (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1')).trim(), 'northd wrote vm4\'s requested chassis');
  await nbctl('--wait=hv', 'sync');
  // The tunnel to hv2 and the patch port to br-phys are ovn-controller's to make; wait for both.
  await until(() => `tunnel and patch ports (log: ${log()})`, async () => {
    const ifaces = await sw.vsctl('list-ifaces', 'br-int');
    return ifaces.includes('ovn-hv2-0') && ifaces.includes('patch-br-int-to-ln-pub') ? true : undefined;
  }, 60_000);
  const { sb, view, theirs } = await compareWithOvnController(t, env, sw, log);
  t.ok(view.tunnels.has('hv2') && view.localnetPatches.has('physnet') && view.vifs.size === 5, `ovn-controller made the tunnel, the patch port and we see the VIFs: ${JSON.stringify([...view.tunnels.keys(), ...view.localnetPatches.keys(), ...view.vifs.keys()])}`);
  t.ok(theirs.size > 40, 'ovn-controller installed a fair physical table');
  t.ok([...theirs.values()].some((f) => f.table === 0 && f.priority === 1010), 'ovn-controller holds vm6 until its RARP, so that is compared');
  const vm = (name: string): number => Number((sb.find((c) => c.table === 'Port_Binding' && c.row?.['logical_port'] === name)?.row?.['tunnel_key']) ?? -1);
  t.ok([...theirs.values()].some((f) => f.table === 39 && f.priority === 100 && new RegExp(`reg15=0x${vm('vm2').toString(16)} actions=.*output:`).test(formatFlow(f))),
    'ovn-controller copies vm2\'s traffic to hv2, so it is compared');
  t.ok([...theirs.values()].some((f) => f.table === 39 && f.priority === 110 && formatFlow(f).includes(`reg14=0x${vm('vm4').toString(16)},`)),
    'ovn-controller tunnels vm4\'s traffic to vm5, so it is compared');
  t.equal([...theirs.values()].filter((f) => (f.table === 37 || f.table === 38) && f.priority === 100).length, 8,
    'ovn-controller answers vm4\'s packets too big for the tunnel to hv2 (IPv4 and IPv6, from and to it), so that is compared');
  for (const tag of [42, 43]) {
    const vlan = `vlan_tci=0x${(0x1000 | tag).toString(16)}/0x1fff`;
    t.ok([...theirs.values()].some((f) => f.table === 0 && f.priority === 150 && formatFlow(f).includes(vlan)), `ovn-controller has the table-0 entry of the container on VLAN ${tag}, so it is compared`);
  }
}

/**
 * hv1 on ovn-encap-type=vxlan; hv2, hv3 and a VTEP gateway vtep1 registered with vxlan encaps
 * before any logical network exists (northd in VXLAN mode from the start). sw0: vm1 and vm2 on
 * hv1, vm3 on hv2 with the highest port key VXLAN carries (2047) and unknown addresses (so in
 * _MC_unknown, 32769) and, learned by hv2's IGMP snooping, in an IP multicast group (32773),
 * vtep0 bound to vtep1; lr0 joins sw0 to pub through lrp-pub, a gateway port on hv2 and hv3 (an
 * HA bundle from hv1). Every remote flow of hv1 is VXLAN.
 */
async function compareVxlan(t: Test): Promise<void> {
  const { env, sbdb, nbctl, sbctl } = await clusterWithTools(t);

  for (const [name, ip] of [['hv2', '127.0.0.2'], ['hv3', '127.0.0.3'], ['vtep1', '127.0.0.4']] as const) await sbctl('chassis-add', name, 'vxlan', ip);
  await sbctl('set', 'Chassis', 'vtep1', 'other_config:is-vtep=true');
  await nbctl('ls-add', 'sw0', '--', 'set', 'Logical_Switch', 'sw0', 'other_config:mcast_snoop=true');
  for (const [p, mac] of [['vm1', '01'], ['vm2', '02']] as const) {
    await nbctl('lsp-add', 'sw0', p, '--', 'lsp-set-addresses', p, `00:00:00:00:00:${mac} 10.0.0.${Number(mac)}`);
  }
  await nbctl('lsp-add', 'sw0', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:00:03 10.0.0.3', 'unknown', '--', 'lsp-set-options', 'vm3', 'requested-tnl-key=2047');
  await nbctl('lsp-add', 'sw0', 'vtep0', '--', 'lsp-set-type', 'vtep0', 'vtep', '--', 'lsp-set-addresses', 'vtep0', 'unknown',
    '--', 'lsp-set-options', 'vtep0', 'vtep-physical-switch=ps0', 'vtep-logical-switch=ls0');
  await nbctl('lr-add', 'lr0');
  await linkSwitchToRouter(nbctl, 'sw0', 'lr0', 'lrp-sw0', '00:00:00:00:ff:01', '10.0.0.254/24');
  await nbctl('ls-add', 'pub');
  await linkSwitchToRouter(nbctl, 'pub', 'lr0', 'lrp-pub', '00:00:00:00:ff:02', '172.16.0.1/24');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'hv2', '20');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'hv3', '10');
  await until('vm3 and vtep0 in the SB', async () => ((await sbctl('--bare', '--columns=logical_port', 'find', 'Port_Binding', 'type=vtep')).trim() === 'vtep0'
    && (await sbctl('--bare', '--columns=tunnel_key', 'find', 'Port_Binding', 'logical_port=vm3')).trim() === '2047' ? true : undefined));
  await sbctl('lsp-bind', 'vm3', 'hv2');
  await sbctl('lsp-bind', 'vtep0', 'vtep1');
  // hv2's snooping learned vm3 in 239.0.0.1: northd makes it the first IP multicast group (32773).
  const sw0Dp = (await sbctl('--bare', '--columns=_uuid', 'find', 'Datapath_Binding', 'external_ids:name=sw0')).trim();
  const hv2 = (await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2')).trim();
  const vm3Pb = (await sbctl('--bare', '--columns=_uuid', 'find', 'Port_Binding', 'logical_port=vm3')).trim();
  await sbctl('create', 'IGMP_Group', 'address="239.0.0.1"', `datapath=${sw0Dp}`, `chassis=${hv2}`, `ports=[${vm3Pb}]`);

  const { sw, log } = await startOvnController(t, sbdb, ['external_ids:ovn-encap-type=vxlan']);
  for (const [i, p] of [[1, 'vm1'], [2, 'vm2']] as const) {
    await sw.vsctl('add-port', 'br-int', `vif${i}`, '--', 'set', 'interface', `vif${i}`, 'type=dummy', `external_ids:iface-id=${p}`);
  }
  for (const p of ['vm1', 'vm2']) {
    await until(() => `${p} up (ovn-controller log: ${log()})`, async () => ((await nbctl('lsp-get-up', p)).trim() === 'up' ? true : undefined), 60_000);
  }
  await nbctl('--wait=hv', 'sync');
  await until(() => `VXLAN tunnels to hv2, hv3 and vtep1 (log: ${log()})`, async () => (
    (await sw.vsctl('--bare', '--columns=name', 'find', 'Interface', 'type=vxlan')).split('\n').filter(Boolean).length === 3 ? true : undefined), 60_000);

  const { sb, view, theirs } = await compareWithOvnController(t, env, sw, log);
  t.same([...view.tunnels.values()].map((p) => p.type), ['vxlan', 'vxlan', 'vxlan'], `hv1's tunnels are VXLAN: ${JSON.stringify([...view.tunnels.keys()])}`);
  const key = (table: string, col: string, value: string): number => Number(sb.find((c) => c.table === table && c.row?.[col] === value)?.row?.['tunnel_key'] ?? -1);
  const sw0 = Number(sb.find((c) => c.table === 'Datapath_Binding' && (c.row?.['external_ids'] as ReadonlyMap<string, string> | undefined)?.get('name') === 'sw0')?.row?.['tunnel_key'] ?? -1);
  const vm3 = key('Port_Binding', 'logical_port', 'vm3');
  t.equal(vm3, 2047, 'vm3 holds port key 2047');
  const out = [...theirs.values()].filter((f) => f.table === 39).map((f) => formatFlow(f));
  const vni = (port: number): string => `load:0x${(sw0 | (port << 12)).toString(16)}->tun_id[0..23]`;
  t.ok(out.some((l) => l.includes(`reg15=0x7ff actions=${vni(2047)},output:`)), 'ovn-controller sends to vm3 with port 2047 in the VNI, so it is compared');
  // _MC_flood, _MC_unknown, _MC_flood_l2 and the IP multicast group 239.0.0.1.
  for (const [group, carried] of [[32768, 2048], [32769, 2049], [32772, 2052], [32773, 2053]] as const) {
    t.ok(out.some((l) => l.includes(`reg15=0x${group.toString(16)} actions=`) && l.includes(vni(carried))), `ovn-controller sends group ${group} as ${carried}, so it is compared`);
  }
  t.ok(out.some((l) => l.includes('reg15=0x8000 ') && l.includes(`load:0x${sw0.toString(16)}->tun_id[0..23]`)), 'ovn-controller floods to the VTEP gateway with the datapath alone, so it is compared');
  t.ok(out.some((l) => l.includes('bundle(')), 'ovn-controller sends to the gateway port through a bundle of hv2 and hv3, so it is compared');
  t.equal([...theirs.values()].filter((f) => f.table === 0 && f.priority === 105).length, 3, 'a multicast entry for each of the three VXLAN tunnels');
  t.ok([...theirs.values()].some((f) => f.table === 0 && f.priority === 110), 'ovn-controller has the ramp switch entry for vtep0, so it is compared');
}

const skip = ovnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed';
t.test('our physical flows equal ovn-controller\'s for the same SB', { skip }, compare);
t.test('with VXLAN tunnels too: our physical flows equal ovn-controller\'s for the same SB', { skip }, compareVxlan);
