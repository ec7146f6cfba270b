// `ovnts agent` as a process: it reads ovn-remote (or --central) and the chassis configuration
// from a real Open vSwitch, registers with an ovnts central, claims a port, installs its flows
// (the flow side over OpenFlow), sets it up, acknowledges so that --wait=hv returns, and on
// SIGTERM with --cleanup releases it and unregisters; without --cleanup its registration
// stays. The SB arrives through the agent stream (the default) or, in the restart test, the
// Watch fallback. Over TLS, with the identity of the Open_vSwitch table's SSL row (ovs-vsctl
// set-ssl), as ovn-controller takes it. Plus the parsing of central endpoints. Method: the real command line
// (compiled, tests/helpers/ovnts-bin.ts), stopped by pid.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { AgentConfigError, parseCentralEndpoints } from '../../bin/commands/agent.js';
import { TlsCredentials } from '../../cluster/tls.js';
import { makePki } from '../helpers/pki.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { isAlive, waitForExit } from '../helpers/process.js';
import { boundTo, eventually, startCentral, vsctlFind } from './local-harness.js';
import { spawnAgent } from '../helpers/agent-e2e.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';
const run = promisify(execFile);

t.test('parseCentralEndpoints', async (t) => {
  t.same(parseCentralEndpoints('127.0.0.1:6641, grpc:h2:6642,[::1]:7'), ['127.0.0.1:6641', 'h2:6642', '[::1]:7']);
  const refused = (text: string): boolean => {
    try {
      parseCentralEndpoints(text);
      return false;
    } catch (err) {
      return err instanceof AgentConfigError;
    }
  };
  t.ok(refused('tcp:127.0.0.1:6642'), 'an OVSDB remote is refused');
  t.ok(refused('nohost'), 'an address without a port');
  t.ok(refused(' , '), 'an empty list');
});

interface Running {
  readonly central: Awaited<ReturnType<typeof startCentral>>;
  readonly sw: Awaited<ReturnType<typeof startOvsSwitch>>;
  readonly agent: { pid: number; output: () => string };
  readonly fail: (err: Error) => never;
}

/** An agent process on its own switch, registered, with vm1's interface added. */
async function runAgent(t: Test, extra: string[] = []): Promise<Running> {
  const central = await startCentral(t);
  await central.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1']]) await central.nbctl(...w);
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv-cli', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.9',
    `external_ids:ovn-remote=grpc:${central.address}`);
  const agent = spawnAgent(t, sw.dir, [`--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`, '--datapath-type=netdev', '--cleanup', ...extra]);
  const fail = (err: Error): never => {
    throw new Error(`${err.message}\n--- agent:\n${agent.output().slice(-3000)}`);
  };
  await eventually('the agent registers (central from external_ids:ovn-remote)', async () => ((await central.sb('Chassis')).some((r) => r.name === 'hv-cli') ? true : undefined), [], 90_000).catch(fail);
  await eventually('br-int', async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined)).catch(fail);
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  return { central, sw, agent, fail };
}

t.test("ovnts agent reaches a TLS central with the identity of the Open_vSwitch table's SSL row (ovs-vsctl set-ssl), held to OVN's ovn-controller role", { skip }, async (t) => {
  // A folder of its own: startCentral's test folder is made (and emptied) when it starts.
  const pkiDir = mkdtempSync(path.join(os.tmpdir(), 'ovnts-pki-'));
  t.teardown(() => rmSync(pkiDir, { recursive: true, force: true }));
  const pki = makePki(pkiDir);
  // Under the role (ovnts central --agent-role) everything the agent writes is its own chassis's.
  const central = await startCentral(t, { tls: new TlsCredentials(pki.identity('member')), southbound: { agentRole: 'ovn-controller' } });
  await central.nbctl('ls-add', 'sw0');
  await central.nbctl('lsp-add', 'sw0', 'vm1');
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  const hv = pki.identity('hv-tls');
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv-tls', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.9', `external_ids:ovn-remote=grpc:${central.address}`);
  await sw.vsctl('set-ssl', hv.privateKey, hv.certificate, hv.caCert);
  const agent = spawnAgent(t, sw.dir, [`--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`, '--datapath-type=netdev', '--no-flows', '--cleanup']);
  await eventually('the agent registers over TLS', async () => ((await central.sb('Chassis')).some((r) => r.name === 'hv-tls') ? true : undefined), [], 90_000).catch((err: Error) => {
    throw new Error(`${err.message}\n--- agent:\n${agent.output().slice(-3000)}`);
  });
  t.pass('it registers its chassis through a member that takes only TLS clients of the CA');
  t.match(agent.output(), `TLS to the central with ${hv.privateKey}, ${hv.certificate}, CA ${hv.caCert} (the Open_vSwitch table's SSL row)`, 'it says where its identity came from');
  await eventually('br-int', async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined));
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  await eventually('vm1 claimed', async () => ((await boundTo(central, 'vm1')) === 'hv-tls' ? true : undefined), [], 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\n--- agent:\n${agent.output().slice(-3000)}`);
  });
  t.pass('it claims the port of a local interface, a write the role allows it');
  // The SSL row set to other paths: followed without a restart, as ovn-controller follows it.
  const other = pki.identity('hv-other');
  await sw.vsctl('set-ssl', hv.privateKey, other.certificate, hv.caCert);
  await eventually('the half-made identity refused', async () => (agent.output().includes(`TLS: kept the identity in use: the private key ${hv.privateKey} does not match the certificate ${other.certificate}`) ? true : undefined), [], 30_000);
  t.pass('new paths are read at once; a key that is not the certificate\'s is refused and the identity in use kept');
  const moved = { privateKey: path.join(pkiDir, 'moved-privkey.pem'), certificate: path.join(pkiDir, 'moved-cert.pem') };
  copyFileSync(other.privateKey, moved.privateKey);
  copyFileSync(other.certificate, moved.certificate);
  await sw.vsctl('set-ssl', moved.privateKey, moved.certificate, hv.caCert);
  await eventually('the moved identity taken', async () => (agent.output().includes(`TLS: took the identity in ${moved.privateKey}, ${moved.certificate}, CA ${hv.caCert}`) ? true : undefined), [], 30_000);
  t.pass('a whole identity at new paths is taken for the next connections');
  await sw.vsctl('set-ssl', hv.privateKey, hv.certificate, hv.caCert);
  process.kill(agent.pid, 'SIGTERM');
  await waitForExit(agent.pid, 30_000);
  t.same(await central.sb('Chassis'), [], 'its --cleanup reached the central over TLS too, within the role');
  t.equal(await boundTo(central, 'vm1'), '', 'and released its port');
});

t.test('ovnts agent registers, claims, and cleans up on SIGTERM', { skip }, async (t) => {
  const { central, sw, agent, fail } = await runAgent(t);
  t.match(agent.output(), /flow side connected to br-int/, 'it opens the flow side on the bridge it created');
  // The Datapath record of br-int's type, whose capabilities ovs-vswitchd fills (ct_zero_snat).
  await eventually('the netdev Datapath record', async () => ((await sw.vsctl('--if-exists', 'get', 'Open_vSwitch', '.', 'datapaths:netdev')).trim() !== '' ? true : undefined)).catch(fail);
  const dp = (await sw.vsctl('get', 'Open_vSwitch', '.', 'datapaths:netdev')).trim();
  t.equal((await sw.vsctl('--if-exists', 'get', 'Datapath', dp, 'capabilities:ct_zero_snat')).trim().replace(/"/g, ''), 'true', 'it made the Datapath record of br-int\'s type, and the userspace datapath says it supports zero SNAT');
  await eventually('vm1 claimed', async () => ((await boundTo(central, 'vm1')) === 'hv-cli' ? true : undefined)).catch(fail);
  t.pass('it claims the port of a local interface');

  process.kill(agent.pid, 'SIGTERM');
  await waitForExit(agent.pid, 30_000);
  t.notOk(isAlive(agent.pid), 'SIGTERM stops it');
  t.same(await central.sb('Chassis'), [], '--cleanup unregistered the chassis');
  t.equal(await boundTo(central, 'vm1'), '', 'and released its port');
});

t.test('ovnts agent installs the flows, sets the port up and acknowledges --wait=hv', { skip }, async (t) => {
  const { central, sw, fail } = await runAgent(t);
  await eventually('vm1 up', async () => ((await central.nbctl('lsp-get-up', 'vm1')) === 'up\n' ? true : undefined), [], 30_000).catch(fail);
  t.pass('it sets vm1 up once the flow side installed its flows');
  const dump = await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-flows', path.join(sw.dir, 'br-int.mgmt')]);
  t.match(dump.stdout, /dl_dst=00:00:00:00:00:01/, 'the logical flows reached br-int');
  const bumped = await central.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }, { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] }]);
  const target = (bumped.results[1] as { rows: { nb_cfg: number }[] }).rows[0]!.nb_cfg;
  const waited = await central.client.wait(target, 'hv', 30_000);
  t.ok(waited.hvCfg >= target, 'hv_cfg reaches nb_cfg (--wait=hv): the agent acknowledged the revision');
});

t.test('without --cleanup the registration outlives the agent; a restart reuses it', { skip }, async (t) => {
  const central = await startCentral(t);
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv-keep', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.10');
  const args = [`--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`, '--datapath-type=netdev', `--central=${central.address}`, '--no-flows', '--sb-source=watch'];
  const first = spawnAgent(t, sw.dir, args);
  const chassis = await eventually('registered', async () => (await central.sb('Chassis')).find((r) => r.name === 'hv-keep'), [], 90_000);
  process.kill(first.pid, 'SIGTERM');
  await waitForExit(first.pid, 30_000);
  t.equal((await central.sb('Chassis')).length, 1, 'the Chassis stays after a plain stop');
  const second = spawnAgent(t, sw.dir, args);
  await eventually('the second agent is running', async () => (/SB source connected/.test(second.output()) ? true : undefined), [], 90_000);
  t.match(second.output(), /no flow side/, 'with --no-flows it says plainly that it installs nothing');
  const again = (await central.sb('Chassis')).find((r) => r.name === 'hv-keep');
  t.same(again?._uuid, chassis._uuid, 'a restarted agent keeps the same Chassis row');
});
