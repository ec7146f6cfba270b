// OVN's RBAC on the Southbound door, as OVN's RBAC tutorial sets it up: `ovn-sbctl set-ssl` and
// `set-connection role=ovn-controller pssl:...` through a remote without a role, then the real
// ovn-sbctl with a chassis's certificate (common name = chassis name) may register that
// chassis and bind ports, and nothing of another chassis or of the operator's; a plain ptcp:
// remote with the role refuses every write (no certificate, no id); a follower's door forwards
// the session with the write, and the leader holds it to the role. Method: in-process central
// members, the door, the real ovn-sbctl and certificates from ovs-pki.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import type { TlsFiles } from '../../cluster/tls.js';
import { APPLY_VERSION_RBAC } from '../../server/apply-version.js';
import { CentralNode } from '../../server/central-node.js';
import type { OvsdbDoor, RemoteStatus } from '../../server/ovsdb-door.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { runTool, type CliResult } from '../helpers/ovnts-cli.js';
import { makePki } from '../helpers/pki.js';
import { freePort } from '../helpers/raft-kv-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const haveTools = existsSync('/usr/bin/ovn-sbctl') && existsSync('/usr/bin/ovs-pki');

type Run = CliResult;
const run = runTool;

/** ovn-sbctl over ssl: as the holder of `id`. */
function sbctlAs(port: number, id: TlsFiles, ...args: string[]): Promise<Run> {
  return run('ovn-sbctl', [`--db=ssl:127.0.0.1:${port}`, '-p', id.privateKey, '-c', id.certificate, '-C', id.caCert, '--timeout=10', ...args]);
}

/** ovn-sbctl over plain TCP. */
function sbctlTcp(port: number, ...args: string[]): Promise<Run> {
  return run('ovn-sbctl', [`--db=tcp:127.0.0.1:${port}`, '--timeout=10', ...args]);
}

async function until<T>(what: string, f: () => T | Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}


/** The refusal ovn-sbctl prints (inside its JSON error, with the quotes escaped). */
function refusalText(id: string, what: string, table: string): string {
  return `RBAC rules for client \\"${id}\\" role \\"ovn-controller\\" ${what} table \\"${table}\\".`;
}

const portOf = (door: OvsdbDoor): number => (door.address as { port: number }).port;
const chassisNames = (central: CentralNode): string[] => [...central.sm.chassis.rows('Chassis').values()].map((r) => r.name as string).sort();

t.test('set-connection role=ovn-controller: a chassis writes its own rows over SSL and nothing else', { skip: haveTools ? false : 'ovn-sbctl or ovs-pki is not installed' }, async (t) => {
  const network = new LocalNetwork('door-rbac');
  const dir = mkdtempSync(join(tmpdir(), 'door-rbac-'));
  const central = await CentralNode.start({ id: 1, clusterId: 'door-rbac', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10 });
  t.teardown(async () => {
    await central.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await until('apply version 11', () => central.sm.applyVersion, (v) => v >= APPLY_VERSION_RBAC);
  await central.transact([
    { op: 'insert', table: 'NB_Global', row: {} },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
  ]);
  const pki = makePki(join(dir, 'ca'));
  const server = pki.identity('server');
  const hv1 = pki.identity('hv1');
  const door = await startOvsdbDoor({ central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0 }, remotesFromDb: true });
  t.teardown(() => door.close());
  const admin = (...args: string[]): Promise<Run> => sbctlTcp(portOf(door), ...args);

  // The tutorial's setup, through the door's own remote, which has no role.
  const sslPort = await freePort();
  const plainPort = await freePort();
  t.equal((await admin('set-ssl', server.privateKey, server.certificate, server.caCert)).code, 0, 'set-ssl');
  const setConnection = await admin('set-connection', `role=ovn-controller`, `pssl:${sslPort}:127.0.0.1`, 'role=ovn-controller', `ptcp:${plainPort}:127.0.0.1`);
  t.equal(setConnection.code, 0, `set-connection role=ovn-controller: ${setConnection.stderr}`);
  await until('both remotes to listen', () => door.remotes(), (r: RemoteStatus[]) => r.filter((x) => x.listening !== undefined).length === 2);
  t.equal((await admin('chassis-add', 'hv3', 'geneve', '192.0.2.3')).code, 0, 'an operator registers hv3');
  // The permissions in force, as ovn-northd shows them, and read-only as every row northd derives.
  t.match((await admin('list', 'RBAC_Role')).stdout, /name\s+: ovn-controller\npermissions\s+: \{BFD=[0-9a-f-]{36}, Chassis=/, 'list RBAC_Role shows the role');
  t.match((await admin('--columns=table,authorization,insert_delete,update', 'find', 'RBAC_Permission', 'table=Encap')).stdout,
    /table\s+: Encap\nauthorization\s+: \[chassis_name\]\ninsert_delete\s+: true\nupdate\s+: \[ip, options, type\]/, 'and its permissions, Encap\'s by chassis_name');
  const edit = await admin('set', 'RBAC_Permission', (await admin('--bare', '--columns=_uuid', 'find', 'RBAC_Permission', 'table=Chassis')).stdout.trim(), 'authorization=[""]');
  t.ok(edit.code !== 0 && edit.stderr.includes('permission error'), `an operator may not edit them: ${edit.stderr.trim().split('\n').pop() ?? ''}`);

  const add = await sbctlAs(sslPort, hv1, 'chassis-add', 'hv1', 'geneve', '127.0.0.1');
  t.equal(add.code, 0, `hv1 registers itself (Chassis and Encap): ${add.stderr}`);
  const bind = await sbctlAs(sslPort, hv1, 'lsp-bind', 'vm1', 'hv1');
  t.equal(bind.code, 0, `and binds vm1 to itself (Port_Binding.chassis): ${bind.stderr}`);
  const pb = await until('vm1 bound', () => [...central.sbView().rows('Port_Binding').values()].find((r) => r.logical_port === 'vm1'), (r) => (r?.chassis as string[] | undefined)?.length === 1);
  t.same(pb?.chassis, [[...central.sm.chassis.rows('Chassis').values()].find((r) => r.name === 'hv1')?._uuid]);
  const set = await sbctlAs(sslPort, hv1, 'set', 'Chassis', 'hv1', 'external_ids:ovn-bridge-mappings=physnet:br-phys');
  t.equal(set.code, 0, `and sets a key of its own Chassis's external_ids (a mutate): ${set.stderr}`);
  t.match((await sbctlAs(sslPort, hv1, '--columns=name', 'list', 'Chassis')).stdout, /name\s+: hv1[\s\S]*name\s+: hv3|name\s+: hv3[\s\S]*name\s+: hv1/, 'it reads every chassis');

  // ovn-sbctl sends a command's operations in the order of its rows' hash (random UUIDs), so
  // which of them is refused first varies, as it does against ovsdb-server: each case lists the
  // refusals that may come.
  const refusals: [string, string[], string[]][] = [
    ['registering another chassis', ['chassis-add', 'hv2', 'geneve', '127.0.0.2'], [refusalText('hv1', 'prohibit row insertion into', 'Chassis'), refusalText('hv1', 'prohibit row insertion into', 'Encap')]],
    ['deleting hv3', ['chassis-del', 'hv3'], [refusalText('hv1', 'prohibit row deletion from', 'Chassis'), refusalText('hv1', 'prohibit row deletion from', 'Encap')]],
    ['changing hv3', ['set', 'Chassis', 'hv3', 'external_ids:x=y'], [refusalText('hv1', 'prohibit mutate operation on', 'Chassis')]],
    ['its own hostname, a column the role does not update', ['set', 'Chassis', 'hv1', 'hostname=elsewhere'], [refusalText('hv1', 'prohibit modification of', 'Chassis')]],
    ['set-connection', ['set-connection', `pssl:${sslPort}:127.0.0.1`], [refusalText('hv1', 'prohibit row insertion into', 'Connection'), refusalText('hv1', 'prohibit modification of', 'SB_Global')]],
    ['set-ssl', ['set-ssl', hv1.privateKey, hv1.certificate, hv1.caCert], [refusalText('hv1', 'prohibit row insertion into', 'SSL'), refusalText('hv1', 'prohibit modification of', 'SB_Global')]],
  ];
  for (const [what, args, texts] of refusals) {
    const before = JSON.stringify([chassisNames(central), [...central.sm.chassis.rows('Connection').values()].map((r) => r.target), central.sm.chassis.rows('SSL').size]);
    const r = await sbctlAs(sslPort, hv1, ...args);
    t.not(r.code, 0, `hv1 may not: ${what}`);
    t.ok(r.stderr.includes(`"permission error"`) && texts.some((text) => r.stderr.includes(text)), `${what}: ovsdb-server's RBAC error (${r.stderr.trim().split('\n').pop() ?? ''})`);
    t.equal(JSON.stringify([chassisNames(central), [...central.sm.chassis.rows('Connection').values()].map((r) => r.target), central.sm.chassis.rows('SSL').size]), before, `${what}: nothing changed`);
  }
  t.same(chassisNames(central), ['hv1', 'hv3']);

  // A plain ptcp: remote with the role: its clients have no certificate, so no id, and every
  // write is refused; reads are not.
  const anonymous = await sbctlTcp(plainPort, 'chassis-add', 'hv5', 'geneve', '127.0.0.5');
  t.not(anonymous.code, 0, 'a client of the plain remote with a role may not register a chassis');
  t.ok(['Chassis', 'Encap'].some((table) => anonymous.stderr.includes(refusalText('(null)', 'prohibit row insertion into', table))), `refused with no id, as ovsdb-server prints it: ${anonymous.stderr.trim().split('\n').pop() ?? ''}`);
  const anonymousUpdate = await sbctlTcp(plainPort, 'set', 'Chassis', 'hv3', 'nb_cfg=5');
  t.ok(anonymousUpdate.stderr.includes(refusalText('(null)', 'prohibit modification of', 'Chassis')), 'nor change one');
  t.match((await sbctlTcp(plainPort, '--columns=name', 'list', 'Chassis')).stdout, /name\s+: hv1/, 'but reads');
  t.same(chassisNames(central), ['hv1', 'hv3'], 'nothing changed');

  // The role comes from the rows as they are now: without it, the same remote is unrestricted.
  t.equal((await admin('set-connection', `pssl:${sslPort}:127.0.0.1`)).code, 0, 'set-connection without a role');
  await until('the plain remote to close', () => door.remotes(), (r: RemoteStatus[]) => r.length === 1);
  const free = await sbctlAs(sslPort, hv1, 'chassis-add', 'hv2', 'geneve', '127.0.0.2');
  t.equal(free.code, 0, `without the role hv1's certificate registers hv2: ${free.stderr}`);
});

t.test('a follower\'s door forwards the session with the write; the leader holds it to the role', { skip: haveTools ? false : 'ovn-sbctl or ovs-pki is not installed' }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const cluster = await startCentralCluster(dir);
  t.teardown(() => cluster.stop());
  await until('every member at apply version 11', () => cluster.members.map((m) => m.central.sm.applyVersion), (v) => v.every((x) => x >= APPLY_VERSION_RBAC));
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader');
  const follower = cluster.members.find((m) => m !== leader);
  if (leader === undefined || follower === undefined) throw new Error('no leader');
  const pki = makePki(join(dir, 'ca'));
  const hv1 = pki.identity('hv1');
  const sslDoor = await startOvsdbDoor({ central: follower.central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') } });
  t.teardown(() => sslDoor.close());
  const adminDoor = await startOvsdbDoor({ central: follower.central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(() => adminDoor.close());
  // The row names the SSL listener by its port: its sessions get the role. (ovn-sbctl talks to
  // a follower only when told: it looks for a clustered database's leader by default.)
  const set = await sbctlTcp(portOf(adminDoor), '--no-leader-only', 'set-connection', 'role=ovn-controller', `pssl:${portOf(sslDoor)}`);
  t.equal(set.code, 0, `set-connection through the follower: ${set.stderr}`);
  await until('the follower to have the row', () => follower.central.sm.chassis.rows('Connection').size, (n) => n === 1);

  t.equal(follower.central.node.status().role, 'follower', 'the door serves a follower');
  const add = await sbctlAs(portOf(sslDoor), hv1, '--no-leader-only', 'chassis-add', 'hv1', 'geneve', '127.0.0.1');
  t.equal(add.code, 0, `hv1 registers through the follower: ${add.stderr}`);
  const other = await sbctlAs(portOf(sslDoor), hv1, '--no-leader-only', 'chassis-add', 'hv2', 'geneve', '127.0.0.2');
  t.not(other.code, 0, 'hv2 may not be registered by hv1');
  t.ok(['Chassis', 'Encap'].some((table) => other.stderr.includes(refusalText('hv1', 'prohibit row insertion into', table))), `the leader refused it under hv1's role: ${other.stderr.trim().split('\n').pop() ?? ''}`);
  await until('the leader to have hv1', () => chassisNames(leader.central), (n) => n.length === 1);
  t.same(chassisNames(leader.central), ['hv1'], 'the leader holds hv1 and not hv2');
  t.equal(follower.central.node.status().role, 'follower', 'and the door\'s member was a follower throughout');

  // The gRPC API takes the session from any client: it can only restrict.
  const refused = await follower.client.transact([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv1']] }], 'OVN_Southbound', { rbac: { role: 'ovn-controller', id: 'hv2' } });
  t.same(refused.results, [{ error: 'permission error', details: 'RBAC rules for client "hv2" role "ovn-controller" prohibit row deletion from table "Chassis".' }], 'a Transact with a session is held to it');
  const done = await follower.client.transact([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv1']] }], 'OVN_Southbound', { rbac: { role: 'ovn-controller', id: 'hv1' } });
  t.same(done.results, [{ count: 1 }], 'and lets the owner delete its own');
  const nb = await follower.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw9' } }], 'OVN_Northbound', { rbac: { role: 'ovn-controller' } });
  t.equal(nb.failed, false, 'the NB has no RBAC: a session on an NB write changes nothing');
});

t.test('below apply version 11 a restricted write is refused before it reaches the log', { skip: haveTools ? false : 'ovn-sbctl or ovs-pki is not installed' }, async (t) => {
  const network = new LocalNetwork('door-rbac-old');
  const dir = testdirAfterTeardowns(t);
  // A member that offers version 10 at most stands for a cluster with a member of an older build.
  const central = await CentralNode.start({ id: 1, clusterId: 'door-rbac-old', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, applyVersionMax: APPLY_VERSION_RBAC - 1 });
  t.teardown(() => central.stop());
  await until('apply version 10', () => central.sm.applyVersion, (v) => v === APPLY_VERSION_RBAC - 1);
  const pki = makePki(join(dir, 'ca'));
  const hv1 = pki.identity('hv1');
  const sslDoor = await startOvsdbDoor({ central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') } });
  t.teardown(() => sslDoor.close());
  const adminDoor = await startOvsdbDoor({ central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(() => adminDoor.close());
  t.equal((await sbctlTcp(portOf(adminDoor), 'set-connection', 'role=ovn-controller', `pssl:${portOf(sslDoor)}`)).code, 0);

  const revision = central.revision;
  const add = await sbctlAs(portOf(sslDoor), hv1, 'chassis-add', 'hv1', 'geneve', '127.0.0.1');
  t.not(add.code, 0, 'hv1 may not register, not even itself');
  t.ok(add.stderr.includes('cannot be enforced until every member of the cluster runs a build that enforces them (apply version 11)'), `saying what the cluster needs: ${add.stderr.trim().split('\n').pop() ?? ''}`);
  t.equal(central.revision, revision, 'nothing was logged');
  t.same(chassisNames(central), []);
  t.match((await sbctlAs(portOf(sslDoor), hv1, 'list', 'Connection')).stdout, /role\s+: ovn-controller/, 'it still reads');
  t.equal((await sbctlTcp(portOf(adminDoor), 'chassis-add', 'hv1', 'geneve', '127.0.0.1')).code, 0, 'and a remote without a role writes as before');
});
