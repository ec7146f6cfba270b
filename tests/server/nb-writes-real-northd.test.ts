// Goal: what an ovnts central writes into switch ports in ovn-northd's place (dynamic_addresses,
// tag, up), and into NB_Global.options (mac_prefix, svc_monitor_mac, max_tunid,
// northd_internal_version), is what the real ovn-northd 23.03 writes. Method: one script of ovn-nbctl commands (each
// with --wait=sb, then a sync, so ovn-northd has also run on its own writes) against the real NB,
// SB and ovn-northd, and against an OVSDB door on an in-process central with its projection;
// after every command, every port's dynamic_addresses and tag must be equal on both sides. Where
// one command makes ovn-northd allocate addresses for several ports at once, the order it takes
// them in follows their UUIDs, which differ between the two sides: there (marked `anyOrder`)
// each port's MAC is compared, and the IP addresses given as a set.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { CentralNode } from '../../server/central-node.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
import { missingTools, startRealSandbox } from '../northd/real-northd.js';

const missing = await missingTools();
const skip = missing === false ? false : `real OVN needed: ${missing}`;

function nbctl(db: string, args: readonly string[], wait = ['--wait=sb']): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ovn-nbctl', [`--db=${db}`, '--timeout=20', ...wait, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`ovn-nbctl ${args.join(' ')} (${db}): ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** Every switch port's dynamic_addresses ('' when it has none), by name; its tag; and its up. */
async function portColumns(db: string): Promise<{ dynamic: Map<string, string>; tags: Record<string, string>; up: Record<string, string> }> {
  const out = await nbctl(db, ['--format=json', '--data=bare', '--columns=name,dynamic_addresses,tag,up', 'list', 'Logical_Switch_Port']);
  // An empty optional column is ["set", []] in ovn-nbctl's JSON.
  const cell = (v: unknown): string => (Array.isArray(v) ? '' : String(v));
  const rows = (JSON.parse(out) as { data: unknown[][] }).data.map((r) => r.map(cell)).sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1));
  return {
    dynamic: new Map(rows.map(([name, dyn]) => [name as string, dyn as string])), tags: Object.fromEntries(rows.filter(([, , tag]) => tag !== '').map(([name, , tag]) => [name, tag])),
    up: Object.fromEntries(rows.map(([name, , , up]) => [name, up === '' ? '(empty)' : up])),
  };
}

/** NB_Global.options. */
async function globalOptions(db: string): Promise<Record<string, string>> {
  return JSON.parse(await nbctl(db, ['--format=json', 'get', 'NB_Global', '.', 'options'], []).then((out) => JSON.stringify(Object.fromEntries(
    [...out.trim().replace(/^\{|\}$/g, '').matchAll(/([\w-]+)="?([^",]*)"?/g)].map((m) => [m[1] as string, m[2] as string]),
  )))) as Record<string, string>;
}

interface Step {
  readonly args: readonly string[];
  readonly anyOrder?: boolean;
}

const lsp = (sw: string, name: string, ...addresses: string[]): Step => ({ args: ['lsp-add', sw, name, '--', 'lsp-set-addresses', name, ...addresses] });

const script: readonly Step[] = [
  { args: ['set', 'NB_Global', '.', 'options:mac_prefix=0a:00:00'] },
  { args: ['ls-add', 'sw0', '--', 'set', 'Logical_Switch', 'sw0', 'other_config:subnet=10.0.0.0/24', 'other_config:exclude_ips="10.0.0.2 10.0.0.5..10.0.0.7"'] },
  lsp('sw0', 'p1', 'dynamic'),
  lsp('sw0', 'p2', 'dynamic'),
  lsp('sw0', 'p3', '0a:00:00:00:01:00 dynamic'),
  lsp('sw0', 'p4', 'dynamic 10.0.0.50'),
  lsp('sw0', 's1', '00:00:00:00:00:99 10.0.0.9'),
  lsp('sw0', 'p5', 'dynamic'),
  // A static address on p1's (written with `set`: lsp-set-addresses refuses a duplicate): p1
  // moves to the lowest free one, keeping its MAC.
  { args: ['set', 'Logical_Switch_Port', 's1', 'addresses="00:00:00:00:00:99 10.0.0.3"'] },
  { args: ['lr-add', 'r0', '--', 'lrp-add', 'r0', 'r0-sw0', '00:00:00:00:ff:01', '10.0.0.11/24', '--', 'lsp-add', 'sw0', 'sw0-r0', '--', 'lsp-set-type', 'sw0-r0', 'router', '--', 'lsp-set-addresses', 'sw0-r0', 'router', '--', 'lsp-set-options', 'sw0-r0', 'router-port=r0-sw0'] },
  lsp('sw0', 'p6', 'dynamic'),
  // A router port is up; made a VIF it is down (no chassis binds it), then a router port again.
  { args: ['lsp-set-type', 'sw0-r0', ''] },
  { args: ['lsp-set-type', 'sw0-r0', 'router'] },
  { args: ['lsp-del', 'p2'] },
  lsp('sw0', 'p7', 'dynamic'),
  // A static MAC on the prefix, where the next port's MAC would go.
  lsp('sw0', 's2', '0a:00:00:00:00:0e 10.0.0.200'),
  lsp('sw0', 'p8', 'dynamic'),
  // A fixed address it cannot give (outside the subnet): ovn-northd writes it once, and its
  // next pass (which its own write of the NB sets off) gives the lowest free one instead, as
  // every pass will. (Two such ports on a switch would take the lowest free ones in the order
  // of their UUIDs, which differ between the sides.)
  lsp('sw0', 'o1', 'dynamic 10.9.9.9'),
  { args: ['lsp-set-addresses', 'p4', 'dynamic 10.0.0.60'] },
  { args: ['lsp-set-addresses', 'p3', '0a:00:00:00:02:00 dynamic'] },
  // Every MAC on the prefix moves; the new ones follow from the ports' IPv4 addresses.
  { args: ['set', 'NB_Global', '.', 'options:mac_prefix=0a:00:01'] },
  { args: ['ls-add', 'sw1', '--', 'set', 'Logical_Switch', 'sw1', 'other_config:ipv6_prefix=fd00::/64'] },
  lsp('sw1', 'q1', 'dynamic'),
  lsp('sw1', 'q2', 'dynamic fd00::5'),
  lsp('sw1', 'q3', '0a:00:01:00:00:77 dynamic'),
  lsp('sw1', 'q4', 'dynamic fd01::5'),
  { args: ['ls-add', 'sw2', '--', 'set', 'Logical_Switch', 'sw2', 'other_config:mac_only=true'] },
  lsp('sw2', 'm1', 'dynamic'),
  lsp('sw2', 'm2', 'dynamic'),
  lsp('sw2', 'm3', 'dynamic 10.0.0.5'),
  { args: ['ls-add', 'sw3', '--', 'set', 'Logical_Switch', 'sw3', 'other_config:subnet=10.1.0.0/29', 'other_config:ipv6_prefix=fd01::'] },
  ...['x1', 'x2', 'x3', 'x4', 'x5', 'x6'].map((n) => lsp('sw3', n, 'dynamic')),
  // The subnet is full: x6 has a MAC and an IPv6 address only, until x2's address is free.
  { args: ['lsp-del', 'x2'] },
  { args: ['remove', 'Logical_Switch', 'sw3', 'other_config', 'ipv6_prefix'] },
  // svc_monitor_mac as a client writes it: kept in its own spelling when it parses, replaced
  // (ovn-northd draws one at random, ours is derived) when it does not.
  { args: ['set', 'NB_Global', '.', 'options:svc_monitor_mac="0A:00:00:00:00:99"'] },
  { args: ['set', 'NB_Global', '.', 'options:svc_monitor_mac=bogus', 'options:note=kept'] },
  { args: ['remove', 'NB_Global', '.', 'options', 'max_tunid'] },
  // Tags: a nested container asking for 0 gets its parent's lowest free one, once; any other
  // tag_request is copied (a localnet port's VLAN too).
  { args: ['ls-add', 'swt', '--', 'lsp-add', 'swt', 'vm'] },
  { args: ['lsp-add', 'swt', 'c1', 'vm', '0'] },
  { args: ['lsp-add', 'swt', 'c2', 'vm', '0'] },
  { args: ['lsp-add', 'swt', 'c3', 'vm', '7'] },
  { args: ['lsp-add', 'swt', 'c4', 'vm', '0'] },
  { args: ['lsp-del', 'c1'] },
  { args: ['lsp-add', 'swt', 'c5', 'vm', '0'] },
  { args: ['set', 'Logical_Switch_Port', 'c3', 'tag_request=0'] },
  { args: ['set', 'Logical_Switch_Port', 'c2', 'tag_request=9'] },
  { args: ['clear', 'Logical_Switch_Port', 'c4', 'tag'] },
  { args: ['lsp-add', 'swt', 'c6', 'vm2', '0'] },
  { args: ['lsp-add', 'swt', 'ln', '--', 'lsp-set-type', 'ln', 'localnet', '--', 'lsp-set-options', 'ln', 'network_name=phys', '--', 'set', 'Logical_Switch_Port', 'ln', 'tag_request=100'] },
  { args: ['lsp-add', 'swt', 'z0', '--', 'set', 'Logical_Switch_Port', 'z0', 'tag_request=0'] },
  { args: ['lsp-set-addresses', 'p1', '00:00:00:00:00:11 10.0.0.77'] },
  // A new subnet: every port takes a new address (in an order that follows the UUIDs).
  { args: ['set', 'Logical_Switch', 'sw0', 'other_config:subnet=192.168.1.0/24'], anyOrder: true },
  // sw0 keeps exclude_ips only: it allocates nothing, and its ports lose what they had.
  { args: ['remove', 'Logical_Switch', 'sw0', 'other_config', 'subnet'] },
  // Two containers in one transaction take the two lowest free tags, in an order that follows
  // their UUIDs (last: the tags of later steps would differ by it).
  { args: ['lsp-add', 'swt', 'c7', 'vm', '0', '--', 'lsp-add', 'swt', 'c8', 'vm', '0'], anyOrder: true },
];

t.test('dynamic_addresses and tags after every command, against the real ovn-northd', { skip }, async (t) => {
  const real = await startRealSandbox(t);
  const realDb = `unix:${real.nbSocket}`;
  const network = new LocalNetwork('ipam-real');
  const central = await CentralNode.start({ id: 1, clusterId: 'ipam-real', dataDir: join(testdirAfterTeardowns(t), 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10 });
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await central.stop();
  });
  const oursDb = `tcp:127.0.0.1:${(door.address as { port: number }).port}`;
  for (let i = 0; central.node.status().role !== 'leader'; i++) {
    t.ok(i < 500, 'the one member leads within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  await nbctl(oursDb, ['init'], []);

  let allocated = 0;
  let tagged = 0;
  for (const step of script) {
    await nbctl(realDb, step.args);
    // Once more: ovn-northd has then run again on its own writes.
    await nbctl(realDb, ['sync']);
    await nbctl(oursDb, step.args);
    const want = await portColumns(realDb);
    const got = await portColumns(oursDb);
    const label = step.args.join(' ');
    if (step.anyOrder === true) {
      const macs = (m: Map<string, string>): Record<string, string> => Object.fromEntries([...m].map(([k, v]) => [k, v.split(' ')[0] ?? '']));
      const ips = (m: Map<string, string>): string[] => [...m.values()].map((v) => v.split(' ').slice(1).join(' ')).sort();
      t.same(macs(got.dynamic), macs(want.dynamic), `${label}: each port's MAC`);
      t.same(ips(got.dynamic), ips(want.dynamic), `${label}: the addresses given`);
      t.same(Object.values(got.tags).sort(), Object.values(want.tags).sort(), `${label}: the tags given`);
    } else {
      t.same(Object.fromEntries(got.dynamic), Object.fromEntries(want.dynamic), `${label}: dynamic_addresses`);
      t.same(got.tags, want.tags, `${label}: tags`);
    }
    t.same(got.up, want.up, `${label}: up`);
    // NB_Global.options: the same keys and values, but a drawn svc_monitor_mac (in form only).
    const wantOptions = await globalOptions(realDb);
    const gotOptions = await globalOptions(oursDb);
    const drawn = (o: Record<string, string>): Record<string, string> => ({ ...o, svc_monitor_mac: /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(o.svc_monitor_mac ?? '') ? '(drawn)' : o.svc_monitor_mac ?? '(none)' });
    t.same(drawn(gotOptions), drawn(wantOptions), `${label}: NB_Global options`);
    allocated = Math.max(allocated, [...want.dynamic.values()].filter((v) => v !== '').length);
    tagged = Math.max(tagged, Object.keys(want.tags).length);
  }
  t.match(await globalOptions(oursDb), { mac_prefix: '0a:00:01', max_tunid: '16711680', northd_internal_version: /^23\.03\./, note: 'kept', svc_monitor_mac: /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/ }, 'ours ends with ovn-northd\'s keys beside the client\'s');
  t.ok(allocated > 15, `up to ${allocated} ports held dynamic addresses at once`);
  t.ok(tagged >= 8, `up to ${tagged} ports held tags at once`);
  const up = (await portColumns(oursDb)).up;
  t.same([up['sw0-r0'], up['p1']], ['true', 'false'], 'a router port is up, an unbound one down');
});
