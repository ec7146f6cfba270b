// Goal: a packet takes the same path through the flows our compiler makes as through the flows
// the real ovn-controller 23.03 makes, from the same Southbound (the real ovn-northd's).
// Method: real NB and SB ovsdb-servers and the real ovn-northd project a topology (three
// switches, a gateway router with NAT, port security, ACLs, a load balancer, DHCP); the real
// ovn-controller binds five VMs on bridge A. On a second ovs-vswitchd with the same ofports,
// bridge B gets our compiler's logical tables and groups through our OpenFlow channel plus A's
// other tables copied as they are (ovs-ofctl), and bridge C everything from the agent's
// DesiredFlows (compiler + physical.ts). ofproto/trace sends the same packets through A, B and
// C: datapath actions (recirculation ids aside) and controller() userdata must agree, and so
// must the groups.

import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { compileLogicalFlow, formatActions, formatFlow, sbCompileContext, type LogicalFlowRow, type SbTables } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import { parseGroupDescription } from '../../agent/flows/group-desc.js';
import type { LocalView } from '../../agent/local-view.js';
import { decodeActions } from '../../agent/openflow/actions.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { FlowMod, GroupMod } from '../../agent/openflow/messages.js';
import { flowKey } from '../../agent/openflow/reconcile.js';
import type { FlowSpec, OfAction } from '../../agent/openflow/types.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { until } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { readStoredSb } from '../helpers/read-sb.js';
import { OVN_NB_SCHEMA, OVN_SB_SCHEMA, startRealCentral, startRealController } from '../helpers/real-ovn-controller.js';

const run = promisify(execFile);
/** The logical pipelines' OpenFlow tables (ingress 8.., egress 42..); the rest is physical. */
const isLogicalTable = (table: number): boolean => (table >= 8 && table <= 36) || (table >= 42 && table <= 63);

function ovnInstalled(): boolean {
  return ovsSwitchInstalled() && ['/usr/bin/ovn-controller', '/usr/bin/ovn-northd', '/usr/bin/ovn-nbctl'].every((p) => existsSync(p))
    && existsSync(OVN_NB_SCHEMA) && existsSync(OVN_SB_SCHEMA);
}

// ---- The topology and the packets --------------------------------------------------------

interface Vm {
  readonly name: string;
  readonly ofport: number;
  readonly mac: string;
  readonly ip4?: string;
  readonly ip6?: string;
}

const vms: readonly Vm[] = [
  { name: 'vm1', ofport: 1, mac: '00:00:00:00:00:01', ip4: '10.0.0.1', ip6: 'fd00::1' },
  { name: 'vm2', ofport: 2, mac: '00:00:00:00:00:02', ip4: '10.0.0.2', ip6: 'fd00::2' },
  { name: 'vm3', ofport: 3, mac: '00:00:00:00:01:03', ip4: '10.1.0.3', ip6: 'fd01::3' },
  // A port with addresses "unknown": unicast to MACs no port claims is delivered here.
  { name: 'vm4', ofport: 4, mac: '00:00:00:00:00:04' },
  // Outside, behind the router's NAT.
  { name: 'vm5', ofport: 5, mac: '00:00:00:00:02:05', ip4: '172.16.0.5' },
];
const lrpSw0Mac = '00:00:00:00:ff:01';
const lbVip = '10.0.0.100';
const lrpExtMac = '00:00:00:00:ff:03';
const natFip = '172.16.0.50';
const lrpSw1Mac = '00:00:00:00:ff:02';

async function buildTopology(nbctl: (...a: string[]) => Promise<string>): Promise<void> {
  await nbctl('ls-add', 'sw0');
  await nbctl('ls-add', 'sw1');
  await nbctl('ls-add', 'ext');
  for (const [vm, sw] of [['vm1', 'sw0'], ['vm2', 'sw0'], ['vm3', 'sw1'], ['vm5', 'ext']] as const) {
    const v = vms.find((x) => x.name === vm) as Vm;
    const addr = `${v.mac} ${v.ip4 ?? ''} ${v.ip6 ?? ''}`.trim();
    await nbctl('lsp-add', sw, vm, '--', 'lsp-set-addresses', vm, addr, '--', 'lsp-set-port-security', vm, addr);
  }
  await nbctl('lsp-add', 'sw0', 'vm4', '--', 'lsp-set-addresses', 'vm4', 'unknown');
  await nbctl('lr-add', 'lr0');
  for (const [sw, mac, ...nets] of [['sw0', lrpSw0Mac, '10.0.0.254/24', 'fd00::fe/64'], ['sw1', lrpSw1Mac, '10.1.0.254/24', 'fd01::fe/64'],
    ['ext', lrpExtMac, '172.16.0.254/24']] as const) {
    await nbctl('lrp-add', 'lr0', `lrp-${sw}`, mac, ...nets);
    await nbctl('lsp-add', sw, `rp-${sw}`, '--', 'lsp-set-type', `rp-${sw}`, 'router', '--', 'lsp-set-addresses', `rp-${sw}`, 'router',
      '--', 'lsp-set-options', `rp-${sw}`, `router-port=lrp-${sw}`);
  }
  // Stateful ACLs on sw0 (conntrack, recirculation) and a drop.
  await nbctl('acl-add', 'sw0', 'from-lport', '1002', 'ip4 && tcp', 'allow-related');
  await nbctl('acl-add', 'sw0', 'to-lport', '1001', 'ip4 && tcp.dst == 22', 'drop');
  // lr0 is a gateway router on hv1 (its own conntrack zones) with SNAT for sw0 and a
  // floating IP for vm2.
  await nbctl('set', 'logical_router', 'lr0', 'options:chassis=hv1');
  await nbctl('lr-nat-add', 'lr0', 'snat', '172.16.0.254', '10.0.0.0/24');
  await nbctl('lr-nat-add', 'lr0', 'dnat_and_snat', natFip, '10.0.0.2');
  // A load balancer on sw0 (ct_lb: a select group per VIP) and DHCPv4 for vm2 (put_dhcp_opts).
  await nbctl('lb-add', 'lb0', `${lbVip}:80`, '10.0.0.2:8080,10.1.0.3:8080', 'tcp');
  await nbctl('ls-lb-add', 'sw0', 'lb0');
  const dhcp = (await nbctl('create', 'DHCP_Options', 'cidr=10.0.0.0/24',
    'options="lease_time"="3600" "router"="10.0.0.254" "server_id"="10.0.0.254" "server_mac"="00:00:00:00:ff:01"')).trim();
  await nbctl('lsp-set-dhcpv4-options', 'vm2', dhcp);
}

interface Probe {
  readonly name: string;
  readonly inPort: number;
  /** ovs-ofctl flow syntax, without in_port. */
  readonly flow: string;
}

const [vm1, vm2, vm3, , vm5] = vms as [Vm, Vm, Vm, Vm, Vm];
const eth = (src: string, dst: string): string => `dl_src=${src},dl_dst=${dst}`;
const arp = (from: Vm, tpa: string, sha = from.mac): string =>
  `${eth(sha, 'ff:ff:ff:ff:ff:ff')},arp,arp_op=1,arp_spa=${from.ip4 ?? ''},arp_tpa=${tpa},arp_sha=${sha},arp_tha=00:00:00:00:00:00`;
const icmp4 = (src: string, dst: string, ipSrc: string, ipDst: string, ttl = 64): string =>
  `${eth(src, dst)},icmp,nw_src=${ipSrc},nw_dst=${ipDst},nw_ttl=${ttl},icmp_type=8,icmp_code=0`;
const tcp4 = (src: Vm, dst: Vm, port: number): string =>
  `${eth(src.mac, dst.mac)},tcp,nw_src=${src.ip4 ?? ''},nw_dst=${dst.ip4 ?? ''},nw_ttl=64,tcp_src=40000,tcp_dst=${port}`;
/** The solicited-node multicast address (and its MAC) of an IPv6 address ending in :x. */
const solicited = (last: number): { ip: string; mac: string } => ({
  ip: `ff02::1:ff00:${last.toString(16)}`, mac: `33:33:ff:00:00:${last.toString(16).padStart(2, '0')}`,
});
const ns = (from: Vm, target: string, last: number, sll = from.mac): string =>
  `${eth(sll, solicited(last).mac)},icmp6,ipv6_src=${from.ip6 ?? ''},ipv6_dst=${solicited(last).ip},nw_ttl=255,icmpv6_type=135,icmpv6_code=0,nd_target=${target},nd_sll=${sll}`;

const probes: readonly Probe[] = [
  { name: 'ARP request for a VM (ARP responder)', inPort: 1, flow: arp(vm1, '10.0.0.2') },
  { name: 'ARP request for the router port', inPort: 1, flow: arp(vm1, '10.0.0.254') },
  { name: 'ARP request for an unknown IP (flooded)', inPort: 1, flow: arp(vm1, '10.0.0.77') },
  { name: 'ARP with a spoofed sender MAC (port security)', inPort: 1, flow: arp(vm1, '10.0.0.2', '00:00:00:00:00:66') },
  { name: 'ICMP to a known MAC', inPort: 1, flow: icmp4(vm1.mac, vm2.mac, '10.0.0.1', '10.0.0.2') },
  { name: 'ICMP to an unknown MAC (to the "unknown" port)', inPort: 1, flow: icmp4(vm1.mac, '00:00:00:00:00:99', '10.0.0.1', '10.0.0.99') },
  { name: 'ICMP to an unknown MAC on a switch without one (drop)', inPort: 3, flow: icmp4(vm3.mac, '00:00:00:00:01:99', '10.1.0.3', '10.1.0.99') },
  { name: 'broadcast IPv4 (flooded)', inPort: 1, flow: `${eth(vm1.mac, 'ff:ff:ff:ff:ff:ff')},udp,nw_src=10.0.0.1,nw_dst=255.255.255.255,nw_ttl=64,udp_src=5000,udp_dst=5000` },
  { name: 'IPv4 multicast', inPort: 2, flow: `${eth(vm2.mac, '01:00:5e:00:00:fb')},udp,nw_src=10.0.0.2,nw_dst=224.0.0.251,nw_ttl=1,udp_src=5353,udp_dst=5353` },
  { name: 'port security: spoofed source MAC', inPort: 1, flow: icmp4('00:00:00:00:00:66', vm2.mac, '10.0.0.1', '10.0.0.2') },
  { name: 'port security: spoofed source IPv4', inPort: 1, flow: icmp4(vm1.mac, vm2.mac, '10.0.0.66', '10.0.0.2') },
  { name: 'port security: spoofed source IPv6', inPort: 1, flow: `${eth(vm1.mac, vm2.mac)},icmp6,ipv6_src=fd00::66,ipv6_dst=fd00::2,nw_ttl=64,icmpv6_type=128,icmpv6_code=0` },
  { name: 'IPv6 ND: solicit a VM (ND responder)', inPort: 1, flow: ns(vm1, 'fd00::2', 2) },
  { name: 'IPv6 ND: solicit the router', inPort: 1, flow: ns(vm1, 'fd00::fe', 0xfe) },
  { name: 'IPv6 ND: spoofed link-layer address (port security)', inPort: 1, flow: ns(vm1, 'fd00::2', 2, '00:00:00:00:00:66') },
  { name: 'IPv6 ping to a VM', inPort: 1, flow: `${eth(vm1.mac, vm2.mac)},icmp6,ipv6_src=fd00::1,ipv6_dst=fd00::2,nw_ttl=64,icmpv6_type=128,icmpv6_code=0` },
  { name: 'TCP port 80 (allow-related ACL, conntrack)', inPort: 1, flow: tcp4(vm1, vm2, 80) },
  { name: 'TCP port 22 (drop ACL)', inPort: 1, flow: tcp4(vm1, vm2, 22) },
  { name: 'TCP to the load balancer VIP (ct_lb, select group)', inPort: 1,
    flow: `${eth(vm1.mac, lrpSw0Mac)},tcp,nw_src=10.0.0.1,nw_dst=${lbVip},nw_ttl=64,tcp_src=40000,tcp_dst=80` },
  { name: 'DHCP discover (put_dhcp_opts)', inPort: 2,
    flow: `${eth(vm2.mac, 'ff:ff:ff:ff:ff:ff')},udp,nw_src=0.0.0.0,nw_dst=255.255.255.255,nw_ttl=64,udp_src=68,udp_dst=67` },
  { name: 'ping the router port', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '10.0.0.254') },
  { name: 'routed ICMP to a VM on the other switch', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '10.1.0.3') },
  { name: 'routed back', inPort: 3, flow: icmp4(vm3.mac, lrpSw1Mac, '10.1.0.3', '10.0.0.2') },
  { name: 'routed with TTL 1 (ICMP time exceeded)', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '10.1.0.3', 1) },
  { name: 'routed to an unresolved neighbour (ARP request)', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '10.1.0.99') },
  { name: 'routed to no route (dropped)', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '192.168.9.9') },
  { name: 'routed IPv6 to a VM on the other switch', inPort: 1, flow: `${eth(vm1.mac, lrpSw0Mac)},icmp6,ipv6_src=fd00::1,ipv6_dst=fd01::3,nw_ttl=64,icmpv6_type=128,icmpv6_code=0` },
  { name: 'SNAT: a VM out to the outside network', inPort: 1, flow: icmp4(vm1.mac, lrpSw0Mac, '10.0.0.1', '172.16.0.5') },
  { name: 'DNAT: the outside to a floating IP', inPort: 5, flow: icmp4(vm5.mac, lrpExtMac, '172.16.0.5', natFip) },
  { name: 'ARP for the floating IP (the router answers)', inPort: 5, flow: arp(vm5, natFip) },
  { name: 'the outside pings the router', inPort: 5, flow: icmp4(vm5.mac, lrpExtMac, '172.16.0.5', '172.16.0.254') },
  { name: 'routed IPv6 to an unresolved neighbour (NS)', inPort: 1, flow: `${eth(vm1.mac, lrpSw0Mac)},icmp6,ipv6_src=fd00::1,ipv6_dst=fd01::99,nw_ttl=64,icmpv6_type=128,icmpv6_code=0` },
];

// ---- Reading the SB and the traces -----------------------------------------------------------

function tablesOf(changes: readonly SbRowChange[]): SbTables {
  const out = new Map<string, Map<string, Row>>();
  for (const c of changes) {
    let m = out.get(c.table);
    if (m === undefined) out.set(c.table, (m = new Map()));
    if (c.row !== undefined) m.set(c.uuid, c.row);
  }
  return out;
}

/** What a trace shows of a packet's fate: every "Datapath actions" line (a recirculation
 *  continues the trace) with recirculation ids blanked, and the opcode (first 4 bytes of the
 *  userdata) of each controller() action; the rest of a controller's userdata encodes nested
 *  actions, which ovn-controller spells with NXM and we with OXM headers (same meaning). */
function outcome(trace: string, odpToOfport: ReadonlyMap<number, number>): string {
  const dp = [...trace.matchAll(/^Datapath actions: (.*)$/gm)].map((m) => (m[1] ?? '')
    .replace(/recirc\(0x[0-9a-f]+\)/g, 'recirc(N)').replace(/recirc_id=(0x)?[0-9a-f]+/g, 'recirc_id=N')
    // Outputs name datapath ports, numbered across every bridge of the datapath: as OpenFlow ports.
    .replace(/(^|[,(])(\d+)(?=[,)]|$)/g, (all, pre: string, n: string) => {
      const of = odpToOfport.get(Number(n));
      return of === undefined ? all : `${pre}of:${of}`;
    }));
  const ctl = [...trace.matchAll(/controller\(userdata=((?:[0-9a-f]{2}\.)*[0-9a-f]{2})/g)].map((m) => controllerUserdata(m[1] ?? ''));
  return [...dp, ...ctl].join(' | ');
}

/** A controller() action's userdata (OVN's action header: opcode, 4 zero bytes, then nested
 *  actions for pinctrl to run), decoded: ovn-controller encodes the nested set_fields with NXM
 *  headers, we with OXM ones, and both decode to the same actions. */
function controllerUserdata(dotted: string): string {
  const bytes = Buffer.from(dotted.replace(/\./g, ''), 'hex');
  const opcode = bytes.subarray(0, 4).toString('hex');
  if (bytes.length <= 8) return `controller(op ${opcode})`;
  try {
    return `controller(op ${opcode}: ${formatActions(decodeActions(bytes.subarray(8)))})`;
  } catch {
    // Not actions (put_dhcp_opts carries DHCP options): the bytes themselves.
    return `controller(op ${opcode}: ${bytes.subarray(8).toString('hex')})`;
  }
}

async function trace(sw: OvsSwitch, bridge: string, p: Probe): Promise<string> {
  return sw.appctl('ofproto/trace', bridge, `in_port=${p.inPort},${p.flow}`);
}

/** A bridge's datapath port numbers → OpenFlow port numbers, from dpif/show
 *  ("    vif1 1/2: (dummy)" is OpenFlow port 1, datapath port 2). */
async function odpPorts(sw: OvsSwitch, bridge: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  let inBridge = false;
  for (const line of (await sw.appctl('dpif/show')).split('\n')) {
    const head = /^ {2}(\S+):$/.exec(line);
    if (head !== null) inBridge = head[1] === bridge;
    const port = /^ {4}\S+ (\d+)\/(\d+):/.exec(line);
    if (inBridge && port !== null) out.set(Number(port[2]), Number(port[1]));
  }
  return out;
}

// ---- The test --------------------------------------------------------------------------------

async function differential(t: Test): Promise<void> {
  const { dir, sb, nbctl } = await startRealCentral(t, 'ofdiff-');
  await buildTopology(nbctl);

  // Bridge A: the real ovn-controller binds the four VMs.
  const { sw: swA, log } = await startRealController(t, sb.socketPath, vms, nbctl);
  let last = '';
  await until(() => `ovn-controller's flows settle (log: ${log()})`, async () => {
    const dump = await swA.ofctl('dump-flows', '--no-stats');
    const same = dump === last && dump.includes('output:') ? true : undefined;
    last = dump;
    await new Promise((r) => setTimeout(r, 1000));
    return same;
  }, 90_000);

  // The same SB, read once everything is bound.
  const changes = await readStoredSb({ path: sb.socketPath });
  const tables = tablesOf(changes);
  const ctZeroSnat = (await swA.vsctl('--bare', '--columns=capabilities', 'list', 'Datapath')).includes('ct_zero_snat=true');
  const tlv = await swA.ofctl('dump-tlv-map');
  const geneve = /0x102\s+0x80\s+4\s+(tun_metadata\d+)/.exec(tlv)?.[1];

  // Bridge B (compiler only) and C (the agent's DesiredFlows), on one more ovs-vswitchd.
  const swB = await startOvsSwitch();
  t.teardown(() => swB.stop());
  await swB.vsctl('add-br', 'br-agent', '--', 'set', 'bridge', 'br-agent', 'datapath_type=netdev', 'protocols=OpenFlow15',
    'fail-mode=secure', 'other-config:disable-in-band=true');
  for (const v of vms) {
    await swB.vsctl('add-port', 'br-int', `vif${v.ofport}`, '--', 'set', 'interface', `vif${v.ofport}`, 'type=dummy', `ofport_request=${v.ofport}`);
    await swB.vsctl('add-port', 'br-agent', `avif${v.ofport}`, '--', 'set', 'interface', `avif${v.ofport}`, 'type=dummy', `ofport_request=${v.ofport}`);
  }
  if (geneve !== undefined) {
    for (const br of ['br-int', 'br-agent']) await run('ovs-ofctl', ['-O', 'OpenFlow15', 'add-tlv-map', br, `{class=0x102,type=0x80,len=4}->${geneve}`], { env: swB.env, cwd: swB.dir });
  }

  // B: A's physical and helper tables as they are, ours for the logical tables.
  const physical = (await swA.ofctl('dump-flows', '--no-stats')).split('\n')
    .filter((l) => l.includes('actions=') && !isLogicalTable(Number(/table=(\d+)/.exec(l)?.[1] ?? 0)));
  const physicalFile = join(dir, 'physical.flows');
  writeFileSync(physicalFile, `${physical.join('\n')}\n`);
  await swB.ofctl('add-flows', physicalFile);
  const groupsA = (await swA.ofctl('dump-groups')).split('\n').filter((l) => l.includes('group_id='));
  t.ok(groupsA.length > 0, `ovn-controller made the load balancer's groups: ${groupsA.join('; ')}`);

  const svcMonitorMac = ([...(tables.get('SB_Global')?.values() ?? [])][0] as unknown as { options: ReadonlyMap<string, string> } | undefined)?.options.get('svc_monitor_mac');
  let conj = 0;
  const groupIds = new Map<string, number>();
  const bound = new Set([...(tables.get('Port_Binding')?.values() ?? [])]
    .filter((r) => (r as unknown as { chassis: readonly string[] }).chassis.length > 0).map((r) => (r as unknown as { logical_port: string }).logical_port));
  const ctx = sbCompileContext(tables, {
    symtab: buildSymtab(),
    ...(svcMonitorMac === undefined ? {} : { extraAddressSets: new Map([['svc_monitor_mac', [svcMonitorMac]]]) }),
    conjIdOfs: (n) => {
      const o = conj;
      conj += n;
      return o;
    },
    // Group ids are ours to allocate (A's ids are ovn-controller's); the same description
    // gets the same id, as ovn-controller's group table does.
    groupId: (desc) => {
      let id = groupIds.get(desc);
      if (id === undefined) groupIds.set(desc, (id = groupIds.size + 1));
      return id;
    },
    isChassisResident: (p) => bound.has(p),
  });
  // Rows compile one by one; flows of different rows with one match (conjunction clauses) are
  // merged the way ovn-controller merges them: their conjunction() actions pooled.
  const ours = new Map<string, FlowSpec>();
  const errors: string[] = [];
  const clash: string[] = [];
  for (const r of tables.get('Logical_Flow')?.values() ?? []) {
    const out = compileLogicalFlow(r as unknown as LogicalFlowRow, { ...ctx, ctZeroSnat });
    if ('error' in out) {
      errors.push(out.error);
      continue;
    }
    for (const f of out.flows) {
      const k = flowKey(f.table, f.priority, f.match);
      const prev = ours.get(k);
      const conjOnly = (x: FlowSpec): boolean => x.actions.length > 0 && x.actions.every((a) => a.kind === 'conjunction');
      if (prev === undefined) ours.set(k, f);
      else if (conjOnly(prev) && conjOnly(f)) ours.set(k, { ...prev, actions: [...prev.actions, ...f.actions] });
      else clash.push(formatFlow(f));
    }
  }
  t.same(errors, [], 'every logical flow of the real SB compiles');
  t.same(clash, [], 'no two rows make the same flow');
  const chB = await OfChannel.connect({ target: swB.mgmtTarget });
  t.teardown(() => chB.close());
  const add = (f: FlowSpec): FlowMod => ({ command: 'add', table: f.table, priority: f.priority, match: f.match, actions: f.actions as OfAction[], cookie: f.cookie });
  const groupMods: GroupMod[] = [];
  for (const [desc, id] of groupIds) {
    const g = parseGroupDescription(id, desc);
    if ('error' in g) t.fail(`group ${id}: ${g.error}`);
    else groupMods.push({ command: 'add', group: g });
  }
  t.equal(groupMods.length, groupsA.length, 'we ask for as many groups as ovn-controller made');
  await chB.installBatch([...groupMods, ...[...ours.values()].map(add)]);

  // C: the agent's whole flow table, for the same SB and the same ofports.
  const zones = new Map<string, number>();
  const brExt = (JSON.parse(await swA.vsctl('--format=json', '--columns=external_ids', 'list', 'Bridge', 'br-int')) as { data: [[string, [string, string][]]][] }).data[0]?.[0];
  for (const [k, v] of brExt?.[1] ?? []) if (k.startsWith('ct-zone-')) zones.set(k.slice('ct-zone-'.length), Number(v));
  const view: LocalView = { chassis: 'hv1', vifs: new Map(vms.map((v) => [v.name, v.ofport])), tunnels: new Map(), localnetPatches: new Map() };
  const agent = new DesiredFlows({ ctZones: zones, ctZeroSnat, ...(geneve === undefined ? {} : { geneveField: geneve }) });
  agent.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, view);
  t.same([...agent.sourceErrors().values()], [], 'the agent compiles every row');
  const chC = await OfChannel.connect({ target: `unix:${join(swB.dir, 'br-agent.mgmt')}` });
  t.teardown(() => chC.close());
  const agentFlows = [...agent.table.flows()].map(([, f]) => f);
  await chC.reconcile(agentFlows, { groups: [...agent.groupSpecs().values()] });
  const flowsA = last.split('\n').filter((l) => l.includes('actions=')).length;
  t.equal(physical.length + ours.size, flowsA, 'B holds as many flows as A: its logical tables are as many flows as ovn-controller made');
  t.comment(`flows: ovn-controller ${flowsA} on A; `
    + `B ${physical.length} copied + ${ours.size} compiled; C ${agentFlows.length} from the agent`);

  // A trace stops where a select group needs the datapath's hash (the load balancer's buckets):
  // the groups themselves are compared instead, ids aside.
  const groupTexts = async (sw: OvsSwitch, bridge: string): Promise<string[]> =>
    (await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-groups', join(sw.dir, `${bridge}.mgmt`)], { env: sw.env })).stdout
      .split('\n').filter((l) => l.includes('group_id=')).map((l) => l.trim().replace(/^group_id=\d+,/, '')).sort();
  const groupsOfA = await groupTexts(swA, 'br-int');
  t.same(await groupTexts(swB, 'br-int'), groupsOfA, 'our compiler\'s groups are ovn-controller\'s');
  t.same(await groupTexts(swB, 'br-agent'), groupsOfA, 'the agent\'s groups are ovn-controller\'s');

  // The packets, through all three.
  const rows: string[][] = [['packet', 'ovn-controller (A)', 'compiler (B)', 'agent (C)']];
  const disagreeB: string[] = [];
  const disagreeC: string[] = [];
  let agreeB = 0;
  let agreeC = 0;
  const [odpA, odpB, odpC] = await Promise.all([odpPorts(swA, 'br-int'), odpPorts(swB, 'br-int'), odpPorts(swB, 'br-agent')]);
  t.ok(vms.every((v) => [odpA, odpB, odpC].every((m) => [...m.values()].includes(v.ofport))), 'every VM port is in each bridge\'s datapath');
  for (const p of probes) {
    const [a, b, c] = await Promise.all([trace(swA, 'br-int', p), trace(swB, 'br-int', p), trace(swB, 'br-agent', p)]);
    const [oa, ob, oc] = [outcome(a, odpA), outcome(b, odpB), outcome(c, odpC)];
    t.ok(oa !== '', `${p.name}: ovn-controller's trace has an outcome`);
    if (ob === oa) agreeB++;
    else disagreeB.push(`${p.name}\n  ovn-controller: ${oa}\n  compiler:       ${ob}\n--- trace A ---\n${a}\n--- trace B ---\n${b}`);
    if (oc === oa) agreeC++;
    else disagreeC.push(`${p.name}\n  ovn-controller: ${oa}\n  agent:          ${oc}`);
    rows.push([p.name, oa, ob === oa ? 'same' : ob, oc === oa ? 'same' : oc]);
    if (process.env.OFDIFF_VERBOSE === '1') t.comment(`${p.name}: ${oa}`);
  }
  const widths = rows[0]?.map((_, i) => Math.min(60, Math.max(...rows.map((r) => (r[i] ?? '').length)))) ?? [];
  for (const r of rows) t.comment(r.map((c, i) => (c.length > 60 ? `${c.slice(0, 57)}...` : c).padEnd(widths[i] ?? 0)).join('  '));
  t.comment(`agreement with ovn-controller: compiler ${agreeB}/${probes.length}, agent ${agreeC}/${probes.length}`);
  t.same(disagreeB, [], 'our compiler\'s logical tables treat every packet as ovn-controller\'s do');
  t.same(disagreeC, [], 'the agent\'s whole flow table treats every packet as ovn-controller\'s does');
  // A trace that never leaves table 0 would agree trivially: the probes must reach the logical
  // pipelines and end in different ways, and the comparison must see our compiled flows: with
  // B's ARP responder table (ls_in_arp_rsp, OpenFlow table 27) emptied, the first probe's
  // outcome must change.
  t.ok(new Set(rows.slice(1).map((r) => r[1])).size >= 8, 'the packets have varied fates');
  const first = probes[0] as Probe;
  const before = outcome(await trace(swB, 'br-int', first), odpB);
  await swB.ofctl('del-flows', 'table=27');
  const after = outcome(await trace(swB, 'br-int', first), odpB);
  t.not(after, before, `the comparison sees B's compiled flows: without table 27, "${first.name}" ends in ${after}`);
}

t.test('the same packets take the same paths through our flows and ovn-controller\'s', { skip: ovnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000 }, differential);
