// Goal: the real ovn-nbctl sees no difference between an ovnts door and the real ovsdb-server.
// Method: one script of ovn-nbctl commands run against a standalone ovsdb-server on OVN's
// ovn-nb.ovsschema and against a door on an in-process central node; every command's exit code,
// stdout and stderr, then `list` of each table and `show`, must be equal once UUIDs are replaced
// by stable labels (the row's table and name, or its rank among its table's rows) and the
// orders that follow from UUID values (rows, set elements, show's siblings) are sorted.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { NB_SCHEMA_PATH, startDoorBesideReal } from '../helpers/door-beside-real.js';

const haveTools = existsSync('/usr/bin/ovn-nbctl') && existsSync('/usr/sbin/ovsdb-server') && existsSync(NB_SCHEMA_PATH);

const tables = ['NB_Global', 'Logical_Switch', 'Logical_Switch_Port', 'Logical_Router', 'Logical_Router_Port', 'ACL', 'Port_Group', 'Load_Balancer', 'NAT', 'Logical_Router_Static_Route', 'DHCP_Options', 'Address_Set', 'Logical_Router_Policy', 'Gateway_Chassis', 'HA_Chassis_Group', 'HA_Chassis'];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function nbctl(db: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile('ovn-nbctl', [`--db=${db}`, '--timeout=20', ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr: stderr.split(db).join('<db>') });
    });
  });
}

/** One command; a function when it needs an earlier output (a UUID printed by this server). */
type Step = readonly string[] | ((earlier: readonly Run[]) => readonly string[]);

const firstLine = (r: Run | undefined): string => (r?.stdout ?? '').split('\n')[0]?.trim() ?? '';

const script: readonly Step[] = [
  ['init'],
  ['ls-add', 'sw0'],
  ['ls-add', 'sw1'],
  ['ls-add', 'sw0'],
  ['--may-exist', 'ls-add', 'sw0'],
  ['lsp-add', 'sw0', 'sw0-p1'],
  ['lsp-add', 'sw0', 'sw0-p2'],
  ['lsp-add', 'sw0', 'sw0-p3', 'sw0-p1', '42'],
  ['lsp-set-addresses', 'sw0-p1', '00:00:00:00:00:01 10.0.0.11'],
  ['lsp-set-addresses', 'sw0-p2', '00:00:00:00:00:02 10.0.0.12 fd00::12', '00:00:00:00:00:03'],
  ['lsp-set-port-security', 'sw0-p1', '00:00:00:00:00:01 10.0.0.11'],
  ['lsp-set-port-security', 'sw0-p2', '00:00:00:00:00:02'],
  ['lsp-set-enabled', 'sw0-p2', 'disabled'],
  ['lsp-get-addresses', 'sw0-p2'],
  ['lsp-get-port-security', 'sw0-p1'],
  ['lsp-get-tag', 'sw0-p3'],
  ['lsp-get-parent', 'sw0-p3'],
  ['lr-add', 'lr0'],
  ['lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.1/24'],
  ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:02', '10.0.1.1/24', '2001:db8::1/64'],
  ['lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:09', '10.9.0.1/24'],
  ['lsp-add', 'sw1', 'sw1-lr0'],
  ['lsp-set-type', 'sw1-lr0', 'router'],
  ['lsp-set-addresses', 'sw1-lr0', 'router'],
  ['lsp-set-options', 'sw1-lr0', 'router-port=lr0-sw1'],
  ['acl-add', 'sw0', 'to-lport', '1000', 'ip4.src == 10.0.0.0/8', 'allow'],
  ['acl-add', 'sw0', 'from-lport', '900', 'tcp.dst == 22', 'drop'],
  ['--log', '--severity=alert', '--name=ssh', 'acl-add', 'sw0', 'from-lport', '901', 'tcp.dst == 23', 'reject'],
  ['acl-add', 'sw0', 'to-lport', '1000', 'ip4.src == 10.0.0.0/8', 'allow'],
  ['pg-add', 'pg0', 'sw0-p1', 'sw0-p2'],
  ['--type=port-group', 'acl-add', 'pg0', 'to-lport', '1001', 'outport == @pg0 && ip4', 'allow-related'],
  ['pg-set-ports', 'pg0', 'sw0-p2'],
  ['lb-add', 'lb0', '30.0.0.10:80', '10.0.0.11:80,10.0.0.12:80', 'tcp'],
  ['lb-add', 'lb1', '30.0.0.11', '10.0.0.12'],
  ['lb-add', 'lb0', '30.0.0.10:80', '10.0.0.13:80'],
  ['ls-lb-add', 'sw0', 'lb0'],
  ['lr-lb-add', 'lr0', 'lb1'],
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.1', '10.0.0.0/24'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.10', '10.0.0.11'],
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.2', '10.0.0.0/24'],
  ['lr-route-add', 'lr0', '0.0.0.0/0', '172.16.0.254'],
  ['lr-route-add', 'lr0', '192.168.0.0/16', '10.0.1.2'],
  ['--policy=src-ip', 'lr-route-add', 'lr0', '10.0.0.0/24', '10.0.1.3'],
  ['lr-route-add', 'lr0', '192.168.0.0/16', '10.0.1.9'],
  ['dhcp-options-create', '10.0.0.0/24', 'owner=test'],
  ['--bare', '--columns=_uuid', 'find', 'DHCP_Options', 'cidr="10.0.0.0/24"'],
  (earlier) => ['dhcp-options-set-options', firstLine(earlier.at(-1)), 'lease_time=3600', 'router=10.0.0.1', 'server_id=10.0.0.1', 'server_mac=c0:ff:ee:00:00:01'],
  (earlier) => ['lsp-set-dhcpv4-options', 'sw0-p1', firstLine(earlier.at(-2))],
  ['lsp-get-dhcpv4-options', 'sw0-p1'],
  (earlier) => ['dhcp-options-get-options', firstLine(earlier.at(-4))],
  ['set', 'Logical_Switch', 'sw0', 'other_config:subnet=10.0.0.0/24', 'external_ids:owner=me'],
  ['set', 'Logical_Switch_Port', 'sw0-p2', 'external_ids:k1=v1', 'external_ids:k2=v2'],
  ['add', 'Logical_Switch', 'sw1', 'other_config', 'mcast_snoop=true'],
  ['remove', 'Logical_Switch_Port', 'sw0-p2', 'external_ids', 'k1'],
  ['set', 'Logical_Router', 'lr0', 'options:chassis=hv1'],
  ['create', 'Address_Set', 'name=as0', 'addresses="10.0.0.11","10.0.0.12"'],
  ['lsp-add', 'sw1', 'sw1-ln'],
  ['lsp-set-type', 'sw1-ln', 'localnet'],
  ['lsp-set-addresses', 'sw1-ln', 'unknown'],
  ['lsp-set-options', 'sw1-ln', 'network_name=physnet1'],
  ['lsp-add', 'sw1', 'sw1-dyn'],
  ['lsp-set-addresses', 'sw1-dyn', 'dynamic'],
  ['lrp-set-gateway-chassis', 'lr0-sw1', 'hv1', '20'],
  ['lrp-set-gateway-chassis', 'lr0-sw1', 'hv2', '10'],
  ['lrp-get-gateway-chassis', 'lr0-sw1'],
  ['lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24', 'reroute', '10.0.1.5'],
  ['lr-policy-add', 'lr0', '50', 'ip4.dst == 8.8.8.8', 'drop'],
  ['lr-policy-list', 'lr0'],
  ['ha-chassis-group-add', 'hagrp0'],
  ['ha-chassis-group-add-chassis', 'hagrp0', 'hv1', '30'],
  ['ha-chassis-group-list'],
  ['--id=@acl', 'create', 'ACL', 'priority=1234', 'direction=from-lport', 'action=allow', 'match="udp"', '--', 'add', 'Logical_Switch', 'sw1', 'acls', '@acl'],
  ['--', '--id=@lsp', 'create', 'Logical_Switch_Port', 'name=sw1-made', '--', 'add', 'Logical_Switch', 'sw1', 'ports', '@lsp', '--', 'set', 'Logical_Switch_Port', 'sw1-made', 'tag_request=5'],
  ['clear', 'Logical_Switch_Port', 'sw0-p2', 'port_security'],
  ['get', 'Logical_Switch', 'sw0', 'other_config:subnet'],
  ['get', 'Logical_Switch', 'sw0', 'name', 'external_ids'],
  ['get', 'Logical_Switch_Port', 'sw0-p1', 'addresses', 'port_security'],
  ['get', 'Logical_Switch', 'sw9', 'name'],
  ['--if-exists', 'get', 'Logical_Switch', 'sw0', 'other_config:nope'],
  ['--columns=name,type,options', 'find', 'Logical_Switch_Port', 'type=router'],
  ['--columns=priority,direction,action,match', 'find', 'ACL', 'priority>=1000'],
  ['--bare', '--columns=name', 'find', 'Logical_Switch', 'other_config:mcast_snoop=true'],
  ['ls-list'],
  ['lr-list'],
  ['lsp-list', 'sw0'],
  ['lrp-list', 'lr0'],
  ['acl-list', 'sw0'],
  ['acl-list', 'pg0'],
  ['lb-list'],
  ['ls-lb-list', 'sw0'],
  ['lr-lb-list', 'lr0'],
  ['lr-nat-list', 'lr0'],
  ['lr-route-list', 'lr0'],
  ['dhcp-options-list'],
  // Deletions from here on (see deletionsFrom).
  ['lsp-del', 'sw0-p3'],
  ['lr-nat-del', 'lr0', 'snat', '172.16.0.2'],
  ['lr-route-del', 'lr0', '192.168.0.0/16'],
  ['acl-del', 'sw0', 'from-lport', '900', 'tcp.dst == 22'],
  ['lb-del', 'lb1'],
  ['pg-del', 'pg0'],
  ['lr-policy-del', 'lr0', '50', 'ip4.dst == 8.8.8.8'],
  ['lrp-del-gateway-chassis', 'lr0-sw1', 'hv2'],
  ['destroy', 'Address_Set', 'as0'],
  ['ls-add', 'sw-gone'],
  ['lsp-add', 'sw-gone', 'sw-gone-p1'],
  ['ls-del', 'sw-gone'],
  ['lsp-del', 'sw9-nope'],
  ['--if-exists', 'lsp-del', 'sw9-nope'],
];

const deletionsFrom = script.findIndex((step) => Array.isArray(step) && step[0] === 'lsp-del');

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** The records of `ovn-nbctl list`: blocks separated by blank lines, as column → value text. */
function records(listOutput: string): Map<string, string>[] {
  return listOutput
    .split(/\n\s*\n/)
    .filter((b) => b.trim() !== '')
    .map((b) => new Map(b.split('\n').filter(Boolean).map((l) => {
      const at = l.indexOf(':');
      return [l.slice(0, at).trim(), l.slice(at + 1).trim()] as [string, string];
    })));
}

/**
 * Labels for this server's row UUIDs: `Table(name)` for a row with a unique non-empty name,
 * else `Table#k`, k its rank by content with UUIDs masked (so equal databases get equal labels).
 */
function labels(lists: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [table, text] of lists) {
    const rows = records(text);
    const names = rows.map((r) => r.get('name') ?? '');
    const ranked = rows.map((r) => ({ r, masked: [...r].filter(([k]) => k !== '_uuid').map(([k, v]) => `${k}=${v.replace(UUID, 'U')}`).join('\n') })).sort((a, b) => (a.masked < b.masked ? -1 : a.masked > b.masked ? 1 : 0));
    for (const [k, { r }] of ranked.entries()) {
      const uuid = r.get('_uuid') ?? '';
      const name = r.get('name') ?? '';
      const unique = name !== '' && name !== '""' && names.filter((n) => n === name).length === 1;
      out.set(uuid, unique ? `${table}(${name.replace(/^"|"$/g, '')})` : `${table}#${k}`);
    }
  }
  return out;
}

/** Replaces UUIDs by labels and sorts what UUID values ordered: bracketed lists of labels. */
function relabel(text: string, map: ReadonlyMap<string, string>): string {
  const replaced = text.replace(UUID, (u) => `<${map.get(u) ?? 'unknown-uuid'}>`);
  return replaced.replace(/\[(<[^\]]*>)\]/g, (_, inner: string) => `[${inner.split(', ').sort().join(', ')}]`);
}

/** show's output with sibling blocks (by indentation) sorted, recursively. */
function sortTree(text: string): string {
  interface Node { line: string; children: Node[] }
  const root: Node = { line: '', children: [] };
  const stack: { indent: number; node: Node }[] = [{ indent: -1, node: root }];
  for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
    const indent = line.length - line.trimStart().length;
    while ((stack.at(-1)?.indent ?? -1) >= indent) stack.pop();
    const node: Node = { line, children: [] };
    stack.at(-1)?.node.children.push(node);
    stack.push({ indent, node });
  }
  const render = (n: Node): string => [n.line, ...n.children.map(render).sort()].filter((l) => l !== '').join('\n');
  return render(root);
}

/** `list`/`find` output with its records in a canonical order. */
function sortRecords(text: string): string {
  return text.split(/\n\s*\n/).map((b) => b.trim()).filter((b) => b !== '').sort().join('\n\n');
}

interface Side {
  readonly steps: string[];
  readonly lists: Map<string, string>;
  readonly show: string;
}

async function runScript(db: string): Promise<Side> {
  const runs: Run[] = [];
  const raw: { args: readonly string[]; run: Run }[] = [];
  const listAll = async (): Promise<Map<string, string>> => {
    const lists = new Map<string, string>();
    for (const table of tables) lists.set(table, (await nbctl(db, ['list', table])).stdout);
    return lists;
  };
  let before = new Map<string, string>();
  for (const [i, step] of script.entries()) {
    // The rows deleted from here on are labelled from the tables as they were just before.
    if (i === deletionsFrom) before = await listAll();
    const args = typeof step === 'function' ? step(runs) : step;
    const run = await nbctl(db, args);
    runs.push(run);
    raw.push({ args, run });
  }
  const lists = await listAll();
  const map = labels(lists);
  for (const [uuid, label] of labels(before)) if (!map.has(uuid)) map.set(uuid, `${label}, deleted`);
  const show = (await nbctl(db, ['show'])).stdout;
  return {
    // find and list print rows in UUID-hash order: their records are sorted.
    steps: raw.map(({ args, run }) => {
      const stdout = args.includes('find') || args.includes('list') ? sortRecords(relabel(run.stdout, map)) : relabel(run.stdout, map);
      return `$ ovn-nbctl ${relabel(args.join(' '), map)}\nexit ${run.code}\n${stdout}\n${relabel(run.stderr, map)}`;
    }),
    lists: new Map([...lists].map(([table, text]) => [table, sortRecords(relabel(text, map))])),
    show: sortTree(relabel(show, map)),
  };
}

t.test('one ovn-nbctl script: the real ovsdb-server and an ovnts door give the same outputs', { skip: haveTools ? false : 'ovn-nbctl, ovsdb-server or the NB schema is missing' }, async (t) => {
  const { real, doorRemote } = await startDoorBesideReal(t, 'nbctl-diff');
  const theirs = await runScript(`unix:${real.socketPath}`);
  const ours = await runScript(doorRemote);
  t.equal(ours.steps.length, script.length);
  for (const [i, step] of theirs.steps.entries()) t.equal(ours.steps[i], step, step.split('\n')[0] ?? step);
  // Port_Group and Address_Set end empty (pg-del, destroy); every other table holds rows.
  t.same(tables.filter((table) => (theirs.lists.get(table) ?? '') === ''), ['Port_Group', 'Address_Set'], 'the tables compared hold rows');
  for (const table of tables) {
    t.equal(ours.lists.get(table), theirs.lists.get(table), `list ${table}`);
  }
  t.equal(ours.show, theirs.show, 'show');
  t.match(theirs.show, /switch <Logical_Switch\(sw0\)> \(sw0\)\n(.*\n)*\s+port sw0-p1\n/, 'show is labelled as expected');
  const all = [...theirs.steps, ...theirs.lists.values(), theirs.show, ...ours.steps, ...ours.lists.values(), ours.show].join('\n');
  t.notMatch(all, /unknown-uuid/, 'every UUID printed is a row of a listed table');
  t.comment(`show, normalized:\n${ours.show}`);
});
