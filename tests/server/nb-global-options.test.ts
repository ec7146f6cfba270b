// From apply version 7 the central writes into NB_Global.options what ovn-northd writes back
// there (mac_prefix, svc_monitor_mac when the NB has none that parses, max_tunid,
// northd_internal_version), in the entry that changes NB_Global, so `ovn-nbctl get NB_Global .
// options` shows them as with the real OVN; SB_Global.options are the same map. Before 7 the NB
// keeps what clients wrote; the move to 7 writes them once.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_NB_GLOBAL_OPTIONS, APPLY_VERSION_VXLAN_MODE } from '../../server/apply-version.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import type { CommitEvent } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

function machine(version: number): { sm: NbStateMachine; projection: NorthdProjection; nb(ops: unknown[]): void; sb(ops: unknown[]): void; move(v: number): void; events: CommitEvent[] } {
  const projection = new NorthdProjection();
  const sm = new NbStateMachine({ schema, projection });
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  const move = (v: number): void => void sm.apply(entry(encodeCommand({ kind: 'apply-version', version: v, seed: [7, 7, 7, 7] })), false);
  move(version);
  const events: CommitEvent[] = [];
  sm.onCommit((e) => events.push(e));
  return {
    sm, projection, events, move,
    nb: (ops) => void sm.apply(entry(encodeCommand(nbTxn(ops, [sm.revision + 1, 1, 2, 3], 0, 1000 + sm.revision))), false),
    sb: (ops) => void sm.apply(entry(encodeCommand(sbTxn(ops, [sm.revision + 1, 4, 5, 6], 0, 5000))), false),
  };
}

const nbOptions = (sm: NbStateMachine): Record<string, string> => Object.fromEntries(([...sm.nb.rows('NB_Global').values()][0]?.options as ReadonlyMap<string, string> | undefined) ?? []);
const sbOptions = (p: NorthdProjection): Record<string, string> => Object.fromEntries(([...(p.view().get('SB_Global')?.values() ?? [])][0] as Row | undefined)?.options as ReadonlyMap<string, string> ?? []);
const setOption = (key: string, value: string): unknown[] => [{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['options', 'delete', ['set', [key]]], ['options', 'insert', ['map', [[key, value]]]]] }];

t.test('NB_Global.options get ovn-northd\'s keys in the entry that changes NB_Global, and the SB_Global options are the same map', async (t) => {
  const m = machine(APPLY_VERSION_NB_GLOBAL_OPTIONS);
  m.nb([{ op: 'insert', table: 'NB_Global', row: { options: ['map', [['note', 'kept']]] } }]);
  const written = nbOptions(m.sm);
  t.match(written, { note: 'kept', mac_prefix: /^[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$/, svc_monitor_mac: /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/, max_tunid: '16711680', northd_internal_version: /^23\.03\.\d+-20\.27\.0-70\.6$/ });
  t.equal(Object.keys(written).length, 5, 'nothing else');
  t.same(sbOptions(m.projection), written, 'SB_Global.options are the same map');
  const change = m.events.at(-1)?.delta.changes.find((c) => c.table === 'NB_Global');
  t.same(change?.kind === 'insert' ? Object.fromEntries(change.new.options as ReadonlyMap<string, string>) : undefined, written, 'watchers see the row with them in the revision of its insert');

  // A switch added: NB_Global untouched, nothing written.
  const before = m.sm.revision;
  m.nb([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]);
  t.notOk(m.events.at(-1)?.delta.changes.some((c) => c.table === 'NB_Global'), 'an entry that does not change NB_Global does not write it');
  t.equal(m.sm.revision, before + 1);

  // A client's svc_monitor_mac as written is kept, in its own spelling; one that does not parse
  // is replaced; a removed mac_prefix comes back the same (the IPAM prefix stays put).
  m.nb(setOption('svc_monitor_mac', '0A:00:00:00:00:99'));
  t.equal(nbOptions(m.sm).svc_monitor_mac, '0A:00:00:00:00:99', 'a valid MAC kept as written');
  t.same(sbOptions(m.projection), nbOptions(m.sm));
  m.nb(setOption('svc_monitor_mac', 'bogus'));
  t.equal(nbOptions(m.sm).svc_monitor_mac, written.svc_monitor_mac, 'one that does not parse replaced by the derived one');
  m.nb([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['options', 'delete', ['set', ['mac_prefix', 'max_tunid']]]] }]);
  t.equal(nbOptions(m.sm).mac_prefix, written.mac_prefix, 'mac_prefix written back the same');
  t.equal(nbOptions(m.sm).max_tunid, '16711680');
  m.nb(setOption('mac_prefix', '0E:00:01'));
  t.equal(nbOptions(m.sm).mac_prefix, '0e:00:01', 'a client\'s prefix in ovn-northd\'s spelling');
  m.nb(setOption('mac_prefix', '00:00:00'));
  t.equal(nbOptions(m.sm).mac_prefix, written.mac_prefix, 'the zero prefix is no prefix: the derived one again');
  m.nb([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  t.same(sbOptions(m.projection), nbOptions(m.sm), 'still the same map');

  // A replica restored from a snapshot goes on alike.
  const r = machine(APPLY_VERSION_NB_GLOBAL_OPTIONS);
  r.sm.restore(m.sm.snapshot());
  m.nb(setOption('svc_monitor_mac', 'nope'));
  r.nb(setOption('svc_monitor_mac', 'nope'));
  t.same(nbOptions(r.sm), nbOptions(m.sm), 'the restored replica writes the same');
});

t.test('before apply version 7 the NB keeps what clients wrote; the move to 7 writes the keys once', async (t) => {
  const m = machine(APPLY_VERSION_NB_GLOBAL_OPTIONS - 1);
  m.nb([{ op: 'insert', table: 'NB_Global', row: { options: ['map', [['note', 'kept']]] } }]);
  t.same(nbOptions(m.sm), { note: 'kept' }, 'nothing written at version 6');
  t.match(sbOptions(m.projection), { note: 'kept', mac_prefix: /./, svc_monitor_mac: /./ }, 'the SB has them all the same');
  m.move(APPLY_VERSION_NB_GLOBAL_OPTIONS);
  t.same(nbOptions(m.sm), sbOptions(m.projection), 'the move wrote them');
  t.ok(m.events.at(-1)?.delta.changes.some((c) => c.table === 'NB_Global'), 'in the move\'s own revision');
});

/** A chassis registering at `ip` with these encap types (one Encap row each). */
const registerChassis = (name: string, ip: string, types: readonly string[]): unknown[] => [
  ...types.map((type, i) => ({ op: 'insert', table: 'Encap', 'uuid-name': `e${i}`, row: { type, ip, chassis_name: name } })),
  { op: 'insert', table: 'Chassis', row: { name, hostname: name, encaps: ['set', types.map((_, i) => ['named-uuid', `e${i}`])] } },
];

t.test('VXLAN mode from apply version 8: a Chassis with a vxlan encap narrows new keys and max_tunid, in the SB and the NB; a restore keeps it', async (t) => {
  const m = machine(APPLY_VERSION_VXLAN_MODE);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb([{ op: 'insert', table: 'Logical_Switch', row: { name: 'big', other_config: ['map', [['requested-tnl-key', '5000']]] } }]);
  const key = (name: string): unknown => [...(m.projection.view().get('Datapath_Binding')?.values() ?? [])].find((d) => (d.external_ids as ReadonlyMap<string, string>).get('name') === name)?.tunnel_key;
  t.equal(key('big'), 5000);
  m.sb(registerChassis('hv1', '192.0.2.1', ['geneve']));
  t.equal(nbOptions(m.sm).max_tunid, '16711680', 'a geneve chassis changes nothing');
  m.sb(registerChassis('hv2', '192.0.2.2', ['geneve', 'vxlan']));
  t.equal(sbOptions(m.projection).max_tunid, '4095', 'a vxlan chassis: VXLAN mode in the SB');
  t.equal(nbOptions(m.sm).max_tunid, '4095', 'and in NB_Global.options, in the same entry');
  m.nb([{ op: 'insert', table: 'Logical_Switch', row: { name: 'late', other_config: ['map', [['requested-tnl-key', '6000']]] } }]);
  t.ok((key('late') as number) <= 4095, 'a request above 4095 is ignored');
  t.equal(key('big'), 5000, 'a key held stays');
  // A replica restored from a snapshot is in VXLAN mode too.
  const r = machine(APPLY_VERSION_VXLAN_MODE);
  r.sm.restore(m.sm.snapshot());
  r.nb([{ op: 'insert', table: 'Logical_Switch', row: { name: 'later', other_config: ['map', [['requested-tnl-key', '7000']]] } }]);
  m.nb([{ op: 'insert', table: 'Logical_Switch', row: { name: 'later', other_config: ['map', [['requested-tnl-key', '7000']]] } }]);
  t.same(sbOptions(r.projection), sbOptions(m.projection));
  t.ok((key('later') as number) <= 4095);
  // The vxlan chassis leaves: the requests hold again.
  m.sb([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv2']] }]);
  t.equal(nbOptions(m.sm).max_tunid, '16711680', 'without a vxlan chassis, no VXLAN mode');
  t.equal(key('late'), 6000, 'the request above 4095 is honoured now');
});

t.test('before apply version 8 a vxlan chassis changes nothing; the move to 8 reads the chassis registered', async (t) => {
  const m = machine(APPLY_VERSION_VXLAN_MODE - 1);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.sb(registerChassis('hv1', '192.0.2.1', ['vxlan']));
  t.equal(sbOptions(m.projection).max_tunid, '16711680', 'at version 7: no VXLAN mode');
  m.move(APPLY_VERSION_VXLAN_MODE);
  t.equal(sbOptions(m.projection).max_tunid, '4095', 'the move read the vxlan chassis');
  t.equal(nbOptions(m.sm).max_tunid, '4095', 'and wrote the NB options in its revision');
});
