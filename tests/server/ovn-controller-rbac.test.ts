// The real ovn-controller 23.03 under OVN's RBAC, as OVN's RBAC tutorial deploys it: the SB
// door serves pssl: with `set-connection role=ovn-controller`, and the chassis connects with a
// certificate whose common name is its system-id (from its own Open vSwitch's SSL settings).
// It must register its Chassis, Encap and Chassis_Private, claim its port and acknowledge
// nb_cfg with no write refused: the ovn-controller role's permissions suffice for a real
// chassis. A second ovn-controller whose certificate names another chassis registers nothing.
// Method: an in-process three-member cluster with the door on a follower, real ovs-vswitchd
// (dummy devices) and the real ovn-controller, stopped by pid.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Test } from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { APPLY_VERSION_RBAC } from '../../server/apply-version.js';
import type { CentralNode } from '../../server/central-node.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { until } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { makePki } from '../helpers/pki.js';
import { stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
const haveTools = ovsSwitchInstalled() && existsSync('/usr/bin/ovn-controller') && existsSync('/usr/bin/ovs-pki');

interface Controller {
  readonly sw: OvsSwitch;
  /** Its whole log so far. */
  log(): string;
}

/** ovn-controller as chassis `systemId` on a switch of its own, connecting to `remote` with the SSL files given to its Open vSwitch. */
async function startController(t: Test, systemId: string, remote: string, ssl: { privateKey: string; certificate: string; caCert: string }): Promise<Controller> {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set-ssl', ssl.privateKey, ssl.certificate, ssl.caCert);
  await sw.vsctl('set', 'open_vswitch', '.', `external_ids:system-id=${systemId}`, `external_ids:ovn-remote=${remote}`,
    'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev');
  const logFile = join(sw.dir, 'ovn-controller.log');
  await run('ovn-controller', [`unix:${join(sw.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${join(sw.dir, 'ovn-controller.pid')}`, `--log-file=${logFile}`],
    { env: { ...sw.env, OVN_RUNDIR: sw.dir, OVN_LOGDIR: sw.dir, OVN_DBDIR: sw.dir } });
  const pid = Number(readFileSync(join(sw.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(pid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  return { sw, log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') };
}

const rows = (central: CentralNode, table: string): Row[] => [...central.sm.chassis.rows(table).values()];
const tail = (text: string): string => text.slice(-1500);

t.test('a real ovn-controller registers, claims its port and acknowledges nb_cfg under role=ovn-controller', { skip: haveTools ? false : 'Open vSwitch, ovn-controller or ovs-pki is not installed' }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const cluster = await startCentralCluster(dir);
  t.teardown(() => cluster.stop());
  await until('every member at apply version 11', async () => (cluster.members.every((m) => m.central.sm.applyVersion >= APPLY_VERSION_RBAC) ? true : undefined));
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader');
  const follower = cluster.members.find((m) => m !== leader);
  if (leader === undefined || follower === undefined) throw new Error('no leader');
  await leader.client.transact([
    { op: 'insert', table: 'NB_Global', row: {} },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
  ]);

  const pki = makePki(join(dir, 'ca'));
  const sbDoor = await startOvsdbDoor({ central: follower.central, db: 'OVN_Southbound', listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') } });
  t.teardown(() => sbDoor.close());
  const port = (sbDoor.address as { port: number }).port;
  // The operator's set-connection (without RBAC: through the gRPC API), naming the door's port.
  const connection = await leader.client.transact([
    { op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: `pssl:${port}`, role: 'ovn-controller' } },
    { op: 'update', table: 'SB_Global', where: [], row: { connections: ['named-uuid', 'c'] } },
  ], 'OVN_Southbound');
  t.equal(connection.failed, false, `the Connection row with role=ovn-controller: ${JSON.stringify(connection.results)}`);
  await until('the follower to have the row', async () => (rows(follower.central, 'Connection').length === 1 ? true : undefined));

  const hv1 = await startController(t, 'hv1', `ssl:127.0.0.1:${port}`, pki.identity('hv1'));
  await hv1.sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  const lspUp = (): unknown => [...leader.central.sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === 'vm1')?.up;
  await until(() => `vm1 up (ovn-controller log: ${tail(hv1.log())})`, async () => (JSON.stringify(lspUp()) === '[true]' ? true : undefined), 60_000);
  t.pass('ovn-controller claimed vm1 under RBAC and the NB sees it up');

  const chassis = rows(leader.central, 'Chassis');
  t.match(chassis.map((r) => r.name), ['hv1'], 'it registered its Chassis');
  t.match(rows(leader.central, 'Encap').map((r) => [r.type, r.ip, r.chassis_name]), [['geneve', '127.0.0.1', 'hv1']], 'its Encap, with chassis_name hv1');
  t.match(rows(leader.central, 'Chassis_Private').map((r) => r.name), ['hv1'], 'and its Chassis_Private');
  const pb = [...leader.central.sbView().rows('Port_Binding').values()].find((r) => r.logical_port === 'vm1');
  t.same(pb?.chassis, [chassis[0]?._uuid], 'Port_Binding.chassis names it');
  t.same(pb?.up, [true], 'and Port_Binding.up is true');

  // nb_cfg: the chassis acknowledges through Chassis_Private (nb_cfg, nb_cfg_timestamp), and hv_cfg follows.
  await leader.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  const global = (): Row | undefined => [...leader.central.sm.nb.rows('NB_Global').values()][0];
  await until(() => `hv_cfg to follow nb_cfg (ovn-controller log: ${tail(hv1.log())})`, async () => ((global()?.hv_cfg as number) >= 1 ? true : undefined), 60_000);
  t.ok((rows(leader.central, 'Chassis_Private')[0]?.nb_cfg as number) >= 1, 'it acknowledged nb_cfg 1 in its Chassis_Private row');

  const log = hv1.log();
  t.notMatch(log, /permission error|RBAC rules/, `no write of ovn-controller was refused: ${(/.*(permission error|RBAC rules).*/.exec(log) ?? [''])[0]}`);
  t.match(log, /ssl:127\.0\.0\.1:\d+: connected/, 'it spoke SSL to the door');

  // A chassis whose certificate names hv1 but whose system-id is hv2: every registration it
  // tries is refused, and hv1's rows stay as they are.
  const owners = (): string[][] => [rows(leader.central, 'Chassis').map((r) => r.name as string), rows(leader.central, 'Encap').map((r) => r.chassis_name as string), rows(leader.central, 'Chassis_Private').map((r) => r.name as string)];
  const hv1Uuid = chassis[0]?._uuid;
  const impostor = await startController(t, 'hv2', `ssl:127.0.0.1:${port}`, pki.identity('hv1'));
  const refusal = await until(() => `hv2's registration to be refused (its log: ${tail(impostor.log())})`, async () => /RBAC rules for client \\?"hv1\\?" role \\?"ovn-controller\\?" prohibit row insertion into table \\?"(Chassis|Encap|Chassis_Private)\\?"/.exec(impostor.log())?.[0], 60_000);
  t.ok(refusal, `ovn-controller as hv2 with hv1's certificate is refused: ${refusal}`);
  t.same(owners(), [['hv1'], ['hv1'], ['hv1']], 'no Chassis, Encap or Chassis_Private of hv2');
  t.equal(rows(leader.central, 'Chassis')[0]?._uuid, hv1Uuid, 'and hv1\'s Chassis is the one it registered');
});
