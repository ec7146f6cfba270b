// Goal: the compile context built from SB rows resolves what ovn-controller 23.03 resolves:
// datapath kind from external_ids, ports and multicast groups per datapath, per-datapath port
// groups named "<tunnel_key>_<name>", address sets. Method: small SB tables in, flows out.

import t from 'tap';
import { compileLogicalFlow, formatFlow, sbCompileContext, type LogicalFlowRow, type SbTables } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import type { Row } from '../../ovsdb/index.js';

function table(rows: Record<string, unknown>[]): Map<string, Row> {
  return new Map(rows.map((r) => [r._uuid as string, r as unknown as Row]));
}

const tables: SbTables = new Map([
  ['Datapath_Binding', table([
    { _uuid: 'dp-ls', tunnel_key: 1, external_ids: new Map([['logical-switch', 'nb-ls'], ['name', 'ls1']]) },
    { _uuid: 'dp-ls2', tunnel_key: 3, external_ids: new Map([['logical-switch', 'nb-ls2']]) },
    { _uuid: 'dp-lr', tunnel_key: 2, external_ids: new Map([['logical-router', 'nb-lr'], ['snat-ct-zone', '10']]) },
  ])],
  ['Port_Binding', table([
    { _uuid: 'pb1', datapath: 'dp-ls', logical_port: 'a', tunnel_key: 1 },
    { _uuid: 'pb2', datapath: 'dp-ls', logical_port: 'b', tunnel_key: 2 },
    { _uuid: 'pb3', datapath: 'dp-ls2', logical_port: 'c', tunnel_key: 1 },
  ])],
  ['Multicast_Group', table([{ _uuid: 'mc1', datapath: 'dp-ls', name: '_MC_flood', tunnel_key: 32768 }])],
  ['Address_Set', table([{ _uuid: 'as1', name: 'as1', addresses: ['10.0.0.1', '10.0.0.2'] }])],
  ['Port_Group', table([
    { _uuid: 'pg-1', name: '1_pg', ports: ['a', 'b'] },
    { _uuid: 'pg-3', name: '3_pg', ports: ['c'] },
  ])],
  ['Logical_DP_Group', table([{ _uuid: 'grp', datapaths: ['dp-ls', 'dp-ls2'] }])],
]);

const ctx = sbCompileContext(tables, { symtab: buildSymtab() });

function lines(row: Partial<LogicalFlowRow>): string[] {
  const r = compileLogicalFlow({
    _uuid: '00000001-0000-4000-8000-000000000000', logical_datapath: ['dp-ls'], logical_dp_group: [], pipeline: 'ingress',
    table_id: 0, priority: 10, match: '1', actions: 'next;', ...row,
  }, ctx);
  return 'error' in r ? [`error: ${r.error}`] : r.flows.map((f) => formatFlow(f)).sort();
}

t.test('ports, multicast groups and "none" resolve within the datapath', async (t) => {
  t.same(lines({ match: 'inport == "b"', actions: 'outport = "_MC_flood"; output;' }),
    ['table=8, priority=10, metadata=0x1,reg14=0x2 actions=set_field:0x8000->reg15,resubmit(,37)']);
  t.same(lines({ match: 'inport == "c"' }), [], 'a port of another datapath never matches');
  t.same(lines({ actions: 'outport = "none"; next;' }), ['table=8, priority=10, metadata=0x1 actions=set_field:0->reg15,resubmit(,9)']);
});

t.test('port groups are per datapath, across a datapath group', async (t) => {
  t.same(lines({ logical_datapath: [], logical_dp_group: ['grp'], match: 'inport == @pg' }), [
    'table=8, priority=10, metadata=0x1,reg14=0x1 actions=resubmit(,9)',
    'table=8, priority=10, metadata=0x1,reg14=0x2 actions=resubmit(,9)',
    'table=8, priority=10, metadata=0x3,reg14=0x1 actions=resubmit(,9)',
  ]);
});

t.test('address sets, router zones and the snat-ct-zone common zone', async (t) => {
  t.same(lines({ match: 'ip4.src == $as1' }), [
    'table=8, priority=10, metadata=0x1,dl_type=0x800,nw_src=10.0.0.1 actions=resubmit(,9)',
    'table=8, priority=10, metadata=0x1,dl_type=0x800,nw_src=10.0.0.2 actions=resubmit(,9)',
  ]);
  t.same(lines({ logical_datapath: ['dp-lr'], match: 'ip4', actions: 'ct_dnat_in_czone(1.1.1.1);' }),
    ['table=8, priority=10, metadata=0x2,dl_type=0x800 actions=ct(commit,table=9,zone=NXM_NX_REG12[0..15],nat(dst=1.1.1.1))']);
  t.same(lines({ logical_datapath: ['dp-lr'], match: 'ip4', actions: 'ct_next;' }),
    ['table=8, priority=10, metadata=0x2,dl_type=0x800 actions=ct(table=9,zone=NXM_NX_REG11[0..15])']);
});
