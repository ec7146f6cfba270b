// ovn-match-northd-version and ovn-ofctrl-wait-before-clear in the agent runtime: while the
// northd version differs the agent claims nothing, installs nothing and acknowledges nothing,
// and once the check is off (or the versions agree) what it held goes in with one apply; a flow
// side that waits before its first install is applied again when the wait ends and only then
// acknowledges. Method: the gate and the held updates as pure functions, then a real Open vSwitch
// and an ovnts central (local-harness) with the agent pretending to be another version, and
// flow-side doubles that record what they are given; acks read from Chassis_Private.nb_cfg.
import path from 'node:path';
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import type { ChassisHello, SbRowChange, SbSource } from '../../agent/sb-source.js';
import { startOvsSwitch } from '../helpers/ovs-switch.js';
import { until } from '../helpers/ovnts-cli.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { AGENT_INTERNAL_VERSION, northdVersionGate } from '../../agent/local/northd-version.js';
import { NORTHD_INTERNAL_VERSION } from '../../northd/sb-global.js';
import { HeldUpdates } from '../../agent/held-updates.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import type { FlowHook } from '../../agent/local/agent-runtime.js';
import { ovsSwitchInstalled } from '../helpers/ovs-switch.js';
import type { Central, Chassis } from './local-harness.js';
import { boundTo, eventually, reportBoundVifs, startCentral, startChassis, uuids, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

const sbGlobal = (options: Record<string, string>): sb.SB_Global => ({ _uuid: 'g', options: new Map(Object.entries(options)) }) as unknown as sb.SB_Global;

t.test('the gate: open without the key; with it, open only while the versions are equal', async (t) => {
  t.equal(AGENT_INTERNAL_VERSION, NORTHD_INTERNAL_VERSION, 'the agent compiles the logical flows of the northd it is built with');
  t.same(northdVersionGate(false, undefined), { kind: 'open' }, 'no key: open, whatever the SB says');
  t.same(northdVersionGate(true, sbGlobal({ northd_internal_version: AGENT_INTERNAL_VERSION })), { kind: 'open' });
  t.same(northdVersionGate(true, sbGlobal({ northd_internal_version: '24.03.0-20.33.0-72.8' })), { kind: 'closed', ours: AGENT_INTERNAL_VERSION, northd: '24.03.0-20.33.0-72.8' });
  t.same(northdVersionGate(true, sbGlobal({})), { kind: 'closed', ours: AGENT_INTERNAL_VERSION, northd: '' }, 'no version in SB_Global: closed');
  t.same(northdVersionGate(true, undefined), { kind: 'closed', ours: AGENT_INTERNAL_VERSION, northd: '' }, 'no SB_Global: closed, as in ovn-controller');
  t.same(northdVersionGate(true, sbGlobal({ northd_internal_version: 'x' }), 'x'), { kind: 'open' });
});

t.test('held updates coalesce to the latest row, a reset absorbs what came before, and too many are given up', async (t) => {
  const row = (uuid: string, v: number): NonNullable<SbUpdate['changes'][number]['row']> => ({ _uuid: uuid, _version: String(v), n: v }) as never;
  const h = new HeldUpdates({ reset: false, fromRevision: 10, toRevision: 11, changes: [{ table: 'A', uuid: 'a', row: row('a', 1) }, { table: 'A', uuid: 'b', row: row('b', 1) }] });
  h.add({ reset: false, fromRevision: 11, toRevision: 12, changes: [{ table: 'A', uuid: 'a', row: row('a', 2) }, { table: 'A', uuid: 'b' }] });
  t.same(h.update(), { reset: false, fromRevision: 10, toRevision: 12, changes: [{ table: 'A', uuid: 'a', row: row('a', 2) }, { table: 'A', uuid: 'b' }] }, 'the latest state of each row, removals kept');
  h.add({ reset: true, fromRevision: 12, toRevision: 20, changes: [{ table: 'A', uuid: 'c', row: row('c', 1) }] });
  h.add({ reset: false, fromRevision: 20, toRevision: 21, changes: [{ table: 'A', uuid: 'c' }, { table: 'A', uuid: 'd', row: row('d', 1) }] });
  t.same(h.update(), { reset: true, fromRevision: 10, toRevision: 21, changes: [{ table: 'A', uuid: 'd', row: row('d', 1) }] }, 'after a reset, the whole view: a row removed since is simply not there');
  const small = new HeldUpdates({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'A', uuid: 'a', row: row('a', 1) }] }, 2);
  t.notOk(small.overflowed);
  small.add({ reset: false, fromRevision: 2, toRevision: 3, changes: [{ table: 'A', uuid: 'b', row: row('b', 1) }, { table: 'A', uuid: 'c', row: row('c', 1) }] });
  t.ok(small.overflowed, 'past the bound: given up (the runtime asks for the whole view instead)');
  t.equal(small.toRevision, 3);
});

/** A flow-side double that records each apply and otherwise acts as the harness's. */
function recording(applies: (SbUpdate | null)[]): (rt: Parameters<typeof reportBoundVifs>[0]) => FlowHook {
  return (rt) => {
    const inner = reportBoundVifs(rt);
    return {
      apply: (u, view) => {
        applies.push(u);
        return inner.apply(u, view);
      },
    };
  };
}

async function nbCfgOf(central: Central, chassis: string): Promise<number> {
  const row = (await central.sb('Chassis_Private')).find((r) => r.name === chassis);
  return typeof row?.nb_cfg === 'number' ? row.nb_cfg : -1;
}

async function addVif(hv: Chassis, name: string, ifaceId: string): Promise<void> {
  await eventually(`${hv.name} has br-int`, async () => ((await vsctlFind(hv.sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined), [hv]);
  await hv.sw.vsctl('add-port', 'br-int', name, '--', 'set', 'interface', name, 'type=dummy', `external_ids:iface-id=${ifaceId}`);
}

t.test('ovn-match-northd-version: another version holds claims, flows and acks until the check is turned off', { skip }, async (t) => {
  const central = await startCentral(t);
  // NB_Global (which `ovnts up` makes): northd then writes SB_Global with its version and nb_cfg.
  await central.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1']]) await central.nbctl(...w);
  const applies: (SbUpdate | null)[] = [];
  const hv1 = await startChassis(t, central, {
    name: 'hv1', encapIp: '192.0.2.1', internalVersion: '99.99.0-20.27.0-70.6',
    extraIds: ['external_ids:ovn-match-northd-version-hv1=true'], flowHook: recording(applies),
  });
  await eventually('the gate closes once the SB arrives', async () => (hv1.logs.some((l) => /does not match northd's 23\.03\.1-20\.27\.0-70\.6/.test(l)) ? true : undefined), [hv1]);
  t.match(hv1.logs.find((l) => /ovn-match-northd-version/.test(l)), /^warn: ovn-match-northd-version: this agent's version 99\.99\.0-20\.27\.0-70\.6 does not match/, 'said once, as a warning');
  const appliedWhileClosed = applies.length;
  t.equal(hv1.runtime.local.northdGate.kind, 'closed');

  await addVif(hv1, 'vif1', 'vm1');
  // A change that every chassis must acknowledge: its revision reaches hv1, which holds it.
  await central.nbctl('--wait=sb', 'lsp-add', 'sw0', 'vm2');
  const nbCfg = Number((await central.nbctl('get', 'NB_Global', '.', 'nb_cfg')).trim());
  await eventually('hv1 was sent the revision', async () => ((hv1.runtime.local.sbRows.sbGlobal()?.nb_cfg ?? 0) >= nbCfg ? true : undefined), [hv1]);
  t.equal(await boundTo(central, 'vm1'), '', 'vm1 is not claimed while the versions differ');
  t.equal(applies.length, appliedWhileClosed, 'the flow side was given nothing');
  t.ok(await nbCfgOf(central, 'hv1') < nbCfg, 'and nothing was acknowledged');
  t.equal(hv1.logs.filter((l) => /does not match northd's/.test(l)).length, 1, 'the gate is logged when it closes, not on every pass');

  await hv1.sw.vsctl('remove', 'open_vswitch', '.', 'external_ids', 'ovn-match-northd-version-hv1');
  await eventually('vm1 bound to hv1 once the check is off', async () => ((await boundTo(central, 'vm1')) === 'hv1' ? true : undefined), [hv1]);
  await eventually('the held revision acknowledged', async () => ((await nbCfgOf(central, 'hv1')) >= nbCfg ? true : undefined), [hv1]);
  const released = applies.slice(appliedWhileClosed).find((u) => u !== null);
  t.ok(released?.changes.some((c) => c.table === 'SB_Global' && ((c.row as sb.SB_Global | undefined)?.nb_cfg ?? 0) >= nbCfg), 'what was held went to the flow side, coalesced into one update');
  t.ok(hv1.logs.some((l) => /^info: ovn-match-northd-version: .*processing again/.test(l)), 'and the log says so');
});

t.test('ovn-match-northd-version with the same version changes nothing', { skip }, async (t) => {
  const central = await startCentral(t);
  // NB_Global (which `ovnts up` makes): northd then writes SB_Global with its version and nb_cfg.
  await central.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1']]) await central.nbctl(...w);
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1', extraIds: ['external_ids:ovn-match-northd-version=true'] });
  await addVif(hv1, 'vif1', 'vm1');
  await eventually('vm1 bound to hv1', async () => ((await boundTo(central, 'vm1')) === 'hv1' ? true : undefined), [hv1]);
  t.equal(hv1.runtime.local.northdGate.kind, 'open');
  t.notOk(hv1.logs.some((l) => /ovn-match-northd-version/.test(l)), 'nothing to say');
});

t.test('a flow side that waits before its first install is applied again when the wait ends, and acknowledges then', { skip }, async (t) => {
  const central = await startCentral(t);
  // NB_Global (which `ovnts up` makes): northd then writes SB_Global with its version and nb_cfg.
  await central.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await central.nbctl('ls-add', 'sw0');
  const applies: { at: number; waiting: boolean }[] = [];
  const waitMs = 1500;
  let endsAt: number | undefined;
  const hv1 = await startChassis(t, central, {
    name: 'hv1', encapIp: '192.0.2.1',
    flowHook: (rt) => {
      const inner = reportBoundVifs(rt);
      return {
        async apply(u, view) {
          const now = Date.now();
          endsAt ??= now + waitMs;
          const waiting = now < endsAt;
          applies.push({ at: now, waiting });
          const r = await inner.apply(u, view);
          return waiting ? { installedPorts: [], errors: [], waitingUntilMs: endsAt } : r;
        },
      };
    },
  });
  await eventually('the first apply', async () => (applies.length > 0 ? true : undefined), [hv1]);
  const first = applies[0]!.at;
  await central.nbctl('--wait=sb', 'lsp-add', 'sw0', 'vm2');
  const nbCfg = Number((await central.nbctl('get', 'NB_Global', '.', 'nb_cfg')).trim());
  if (Date.now() < first + waitMs - 200) t.ok(await nbCfgOf(central, 'hv1') < nbCfg, 'nothing acknowledged during the wait');
  await eventually('acknowledged after the wait', async () => ((await nbCfgOf(central, 'hv1')) >= nbCfg ? true : undefined), [hv1]);
  const done = applies.find((a) => !a.waiting);
  t.ok(done !== undefined && done.at >= first + waitMs, `the apply that installs comes at the end of the wait (${(done?.at ?? 0) - first} ms after the first)`);
  t.ok(applies.filter((a) => !a.waiting).length >= 1);
  const chassis = (await central.sb('Chassis')).find((r) => r.name === 'hv1');
  t.ok(uuids(chassis?._uuid).length === 1);
});

/** An SbSource the test drives by hand: it records acks and resyncs and answers transactions. */
class HandSource implements SbSource {
  readonly acks: [number, number][] = [];
  resyncs = 0;
  probeMs: number[] = [];
  private onUpdate: ((u: SbUpdate) => Promise<void>) | undefined;
  private rev = 0;
  start(_hello: ChassisHello, onUpdate: (u: SbUpdate) => Promise<void>): void {
    this.onUpdate = onUpdate;
  }
  async deliver(changes: SbRowChange[], reset = false): Promise<number> {
    const from = this.rev;
    this.rev++;
    await (this.onUpdate as (u: SbUpdate) => Promise<void>)({ reset, fromRevision: from, toRevision: this.rev, changes });
    return this.rev;
  }
  ack(revision: number, nbCfg: number): void {
    this.acks.push([revision, nbCfg]);
  }
  transact = async (ops: readonly unknown[]): Promise<unknown[]> => ops.map(() => ({}));
  resync(): void {
    this.resyncs++;
  }
  setProbeIntervalMs(ms: number): void {
    this.probeMs.push(ms);
  }
  async close(): Promise<void> {}
}

const globalRow = (version: string, nbCfg: number): SbRowChange => ({ table: 'SB_Global', uuid: '00000000-0000-4000-8000-000000000001', row: { _uuid: '00000000-0000-4000-8000-000000000001', _version: `${nbCfg}`, nb_cfg: nbCfg, options: new Map([['northd_internal_version', version]]), external_ids: new Map(), connections: [], ssl: [], ipsec: false } as unknown as Row });

t.test('the runtime with a source driven by hand: held while closed, released by the configuration alone, a resync when too much was held', { skip }, async (t) => {
  const sw = await startOvsSwitch({ bridge: 'br-int' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.1',
    'external_ids:ovn-match-northd-version=true', 'external_ids:ovn-remote-probe-interval=3000');
  const ovs = new OvsdbClient({ target: `unix:${path.join(sw.dir, 'db.sock')}`, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const source = new HandSource();
  const applies: SbUpdate[] = [];
  const logs: string[] = [];
  const rt = new AgentRuntime({
    ovs, source, hostname: 'hv1', datapathType: 'netdev', heldChangesMax: 3, log: (l, m) => logs.push(`${l}: ${m}`),
    flows: { apply: async (u) => { if (u !== null) applies.push(u); return { installedPorts: [], errors: [] }; } },
  });
  t.teardown(async () => {
    await rt.stop(false);
    await ovs.close();
  });
  await rt.start();
  t.same(source.probeMs, [3000], 'ovn-remote-probe-interval reaches the source before it starts');
  const theirs = '24.09.0-20.37.0-73.0';
  await source.deliver([globalRow(theirs, 1)], true);
  await source.deliver([globalRow(theirs, 2)]);
  t.same(applies, [], 'versions differ: the flow side gets nothing');
  t.same(source.acks, [], 'and nothing is acknowledged');
  // The check turned off in Open vSwitch, no SB update after: the held updates go in, as one.
  await sw.vsctl('remove', 'open_vswitch', '.', 'external_ids', 'ovn-match-northd-version');
  await until(() => 'the held updates applied', async () => (source.acks.length > 0 ? true : undefined), 20_000);
  t.same(applies.map((u) => [u.reset, u.fromRevision, u.toRevision, u.changes.length]), [[true, 0, 2, 1]], 'one reset update from 0 to 2 with the latest SB_Global');
  t.same(source.acks, [[2, 2]], 'acknowledged with its nb_cfg');

  // On again; this time more rows are held than the bound: a resync instead.
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-match-northd-version=true');
  await until(() => 'the gate closed again', async () => (rt.local.northdGate.kind === 'closed' ? true : undefined), 20_000);
  const rows = [1, 2, 3, 4].map((i): SbRowChange => ({ table: 'Meter', uuid: `00000000-0000-4000-8000-00000000010${i}`, row: { _uuid: `00000000-0000-4000-8000-00000000010${i}`, _version: '1', name: `m${i}`, unit: 'pktps', bands: [], fair: [] } as unknown as Row }));
  await source.deliver([globalRow(theirs, 3), ...rows]);
  t.equal(applies.length, 1);
  await source.deliver([globalRow(AGENT_INTERNAL_VERSION, 4)]);
  t.equal(source.resyncs, 1, 'the versions agree again, but what was held overflowed: the source is asked for the whole view');
  t.equal(applies.length, 1, 'and nothing is installed from rows that old');
  t.same(source.acks, [[2, 2]]);
  await source.deliver([globalRow(AGENT_INTERNAL_VERSION, 4), ...rows], true);
  t.same(applies.at(-1)?.reset, true, 'the reset that follows is applied');
  t.same(source.acks.at(-1), [5, 4], 'and acknowledged');
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-remote-probe-interval=0');
  await until(() => 'the new probe interval', async () => (source.probeMs.at(-1) === 0 ? true : undefined), 20_000);
  t.pass('a changed ovn-remote-probe-interval reaches the source');
});

t.test('an apply in flight when the gate closes does not acknowledge what the gate holds', { skip }, async (t) => {
  const sw = await startOvsSwitch({ bridge: 'br-int' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=192.0.2.1',
    'external_ids:ovn-match-northd-version=true');
  const ovs = new OvsdbClient({ target: `unix:${path.join(sw.dir, 'db.sock')}`, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const source = new HandSource();
  let blocked: Promise<void> | undefined;
  let unblock = (): void => undefined;
  let nullApplies = 0;
  const rt = new AgentRuntime({
    ovs, source, hostname: 'hv1', datapathType: 'netdev', log: () => undefined,
    flows: {
      apply: async (u) => {
        if (u === null) {
          nullApplies++;
          if (blocked !== undefined) await blocked;
        }
        return { installedPorts: [], errors: [] };
      },
    },
  });
  t.teardown(async () => {
    unblock();
    await rt.stop(false);
    await ovs.close();
  });
  await rt.start();
  await source.deliver([globalRow(AGENT_INTERNAL_VERSION, 1)], true);
  t.same(source.acks, [[1, 1]]);
  blocked = new Promise((r) => (unblock = r));
  const before = nullApplies;
  // A new VIF changes the LocalView: an apply of the view alone starts, and blocks.
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  await until('the view apply in flight', async () => (nullApplies > before ? true : undefined), 20_000);
  await source.deliver([globalRow('24.09.0-20.37.0-73.0', 2)]);
  t.equal(rt.local.northdGate.kind, 'closed');
  unblock();
  blocked = undefined;
  await new Promise((r) => setTimeout(r, 200));
  t.same(source.acks, [[1, 1]], 'revision 2 is held, not acknowledged by the view apply that finished after it came');
  await source.deliver([globalRow(AGENT_INTERNAL_VERSION, 3)]);
  await until('the release acknowledged', async () => (source.acks.at(-1)?.[0] === 3 ? true : undefined), 20_000);
  // Revision 2 goes in with the release (the local side saw the gate open as it read revision 3), then 3.
  t.same(source.acks, [[1, 1], [2, 2], [3, 3]], 'acknowledged, in order, once applied');
});
