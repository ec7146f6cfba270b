// `ovnts agent` as a process: it reads ovn-remote (or --central) and the chassis configuration
// from a real Open vSwitch, registers with an ovnts central, claims a port, and on SIGTERM with
// --cleanup releases it and unregisters; without --cleanup its registration stays. Plus the
// parsing of central endpoints. Method: the real command line through tsx, stopped by pid.
import { spawn } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { AgentConfigError, parseCentralEndpoints } from '../../bin/commands/agent.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { isAlive, stopPid, waitForExit } from '../helpers/process.js';
import { boundTo, eventually, startCentral, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';
const bin = path.join(import.meta.dirname, '../../bin/ovnts.ts');

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

function startAgent(t: Test, args: string[]): { pid: number; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', bin, 'agent', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const pid = child.pid as number;
  t.teardown(() => stopPid(pid, (argv) => argv.includes('agent')));
  return { pid, output: () => output };
}

t.test('ovnts agent registers, claims, and cleans up on SIGTERM', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1']]) await central.nbctl(...w);
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv-cli', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.9',
    `external_ids:ovn-remote=grpc:${central.address}`);
  const agent = startAgent(t, [`--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`, '--datapath-type=netdev', '--cleanup']);
  await eventually('the agent registers (central from external_ids:ovn-remote)', async () => ((await central.sb('Chassis')).some((r) => r.name === 'hv-cli') ? true : undefined), [], 90_000)
    .catch((err: Error) => { throw new Error(`${err.message}\n${agent.output()}`); });
  await eventually('br-int', async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined));
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  await eventually('vm1 claimed', async () => ((await boundTo(central, 'vm1')) === 'hv-cli' ? true : undefined));
  t.pass('it claims the port of a local interface');
  t.match(agent.output(), /no flow side/, 'and says plainly that no flow side is wired');

  process.kill(agent.pid, 'SIGTERM');
  await waitForExit(agent.pid, 30_000);
  t.notOk(isAlive(agent.pid), 'SIGTERM stops it');
  t.same(await central.sb('Chassis'), [], '--cleanup unregistered the chassis');
  t.equal(await boundTo(central, 'vm1'), '', 'and released its port');
});

t.test('without --cleanup the registration outlives the agent; a restart reuses it', { skip }, async (t) => {
  const central = await startCentral(t);
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv-keep', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.10');
  const args = [`--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`, '--datapath-type=netdev', `--central=${central.address}`];
  const first = startAgent(t, args);
  const chassis = await eventually('registered', async () => (await central.sb('Chassis')).find((r) => r.name === 'hv-keep'), [], 90_000);
  process.kill(first.pid, 'SIGTERM');
  await waitForExit(first.pid, 30_000);
  t.equal((await central.sb('Chassis')).length, 1, 'the Chassis stays after a plain stop');
  const second = startAgent(t, args);
  await eventually('the second agent is running', async () => (/SB source connected/.test(second.output()) ? true : undefined), [], 90_000);
  const again = (await central.sb('Chassis')).find((r) => r.name === 'hv-keep');
  t.same(again?._uuid, chassis._uuid, 'a restarted agent keeps the same Chassis row');
});
