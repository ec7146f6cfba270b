// Goal: a whole Logical_Flow row compiles to the flows ovn-controller 23.03 installs: table,
// priority, metadata, cookie, the match with the actions' prerequisites, conjunctions.
// Method: table-driven rows in, ovs-ofctl text out (cookies shown), plus per-flow error cases.

import t from 'tap';
import { compileLogicalFlow, createCompileMemo, formatFlow, type FlowCompileContext, type LogicalFlowRow } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import type { FlowSpec } from '../../agent/openflow/types.js';

const symtab = buildSymtab();
const portKeys: Record<string, Record<string, number>> = {
  ls1: { lsp1: 1, lsp2: 2, 'ls1-rp': 3, _MC_flood: 0x8000, _MC_unknown: 0x8001 },
  lr1: { 'lrp-ls1': 1 },
};

function context(over: Partial<FlowCompileContext> = {}): FlowCompileContext {
  let conj = 0;
  return {
    symtab,
    datapath: (u) => (u === 'ls1' ? { tunnelKey: 1, isSwitch: true } : u === 'ls2' ? { tunnelKey: 7, isSwitch: true }
      : u === 'lr1' ? { tunnelKey: 2, isSwitch: false } : undefined),
    dpGroup: (g) => (g === 'grp' ? ['ls1', 'ls2'] : undefined),
    lookupPort: (dp, n) => portKeys[dp]?.[n],
    addressSet: (n) => (n === 'svc_monitor_mac' ? ['00:00:00:00:00:aa'] : n === 'as1' ? ['10.0.0.1', '10.0.0.2'] : undefined),
    portGroup: (n) => (n === 'pg1' ? ['lsp1', 'lsp2'] : undefined),
    conjIdOfs: (n) => {
      const o = conj;
      conj += n;
      return o;
    },
    ...over,
  };
}

const uuid = 'a1b2c3d4-0000-4000-8000-000000000001';

function row(pipeline: 'ingress' | 'egress', table: number, priority: number, match: string, actions: string,
  dp: Partial<LogicalFlowRow> = {}): LogicalFlowRow {
  return { _uuid: uuid, logical_datapath: ['ls1'], logical_dp_group: [], pipeline, table_id: table, priority, match, actions, ...dp };
}

function text(r: LogicalFlowRow, ctx: FlowCompileContext = context()): string[] {
  const out = compileLogicalFlow(r, ctx);
  if ('error' in out) return [`error: ${out.error}`];
  return out.flows.map((f) => formatFlow(f, { cookie: true })).sort();
}

interface Case {
  readonly row: LogicalFlowRow;
  readonly expected: readonly string[];
}

const c = 'cookie=0xa1b2c3d4';
const cases: readonly Case[] = [
  { row: row('ingress', 0, 50, 'inport == "lsp1" && eth.src == 00:00:00:00:00:01', 'next;'),
    expected: [`table=8, priority=50, ${c}, metadata=0x1,reg14=0x1,dl_src=00:00:00:00:00:01 actions=resubmit(,9)`] },
  { row: row('ingress', 24, 0, '1', 'outport = get_fdb(eth.dst); next;'),
    expected: [`table=32, priority=0, ${c}, metadata=0x1 actions=set_field:0->reg15,resubmit(,71),resubmit(,33)`] },
  { row: row('ingress', 24, 70, 'eth.mcast', 'outport = "_MC_flood"; output;'),
    expected: [`table=32, priority=70, ${c}, metadata=0x1,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00 actions=set_field:0x8000->reg15,resubmit(,37)`] },
  { row: row('egress', 9, 0, '1', 'output;'),
    expected: [`table=51, priority=0, ${c}, metadata=0x1 actions=resubmit(,64)`] },
  { row: row('egress', 8, 50, 'reg0[15] == 1', 'drop;'),
    expected: [`table=50, priority=50, ${c}, metadata=0x1,reg0=0x8000/0x8000 actions=drop`] },
  // The actions' prerequisite `ip` splits the flow in two, as in OVN.
  { row: row('ingress', 6, 100, 'reg0[0] == 1', 'ct_next;'),
    expected: [
      `table=14, priority=100, ${c}, metadata=0x1,reg0=0x1/0x1,dl_type=0x800 actions=ct(table=15,zone=NXM_NX_REG13[0..15])`,
      `table=14, priority=100, ${c}, metadata=0x1,reg0=0x1/0x1,dl_type=0x86dd actions=ct(table=15,zone=NXM_NX_REG13[0..15])`,
    ] },
  { row: row('ingress', 6, 110, 'reg0[2] == 1', 'ct_lb_mark;'),
    expected: [
      `table=14, priority=110, ${c}, metadata=0x1,reg0=0x4/0x4,dl_type=0x800 actions=ct(table=15,zone=NXM_NX_REG13[0..15],nat)`,
      `table=14, priority=110, ${c}, metadata=0x1,reg0=0x4/0x4,dl_type=0x86dd actions=ct(table=15,zone=NXM_NX_REG13[0..15],nat)`,
    ] },
  { row: row('ingress', 1, 50, '1', 'reg0[15] = check_in_port_sec(); next;'),
    expected: [`table=9, priority=50, ${c}, metadata=0x1 actions=set_field:0/0x1000->reg10,resubmit(,73),move:NXM_NX_REG10[12]->NXM_NX_XXREG0[111],resubmit(,10)`] },
  { row: row('ingress', 3, 100, 'inport == "lsp2"', 'reg0[11] = lookup_fdb(inport, eth.src); next;'),
    expected: [`table=11, priority=100, ${c}, metadata=0x1,reg14=0x2 actions=set_field:0/0x100->reg10,resubmit(,72),move:NXM_NX_REG10[8]->NXM_NX_XXREG0[107],resubmit(,12)`] },
  { row: row('ingress', 24, 110, 'eth.dst == $svc_monitor_mac && (tcp || icmp || icmp6)', 'handle_svc_check(inport);'),
    expected: [
      `table=32, priority=110, ${c}, metadata=0x1,dl_dst=00:00:00:00:00:aa,dl_type=0x800,nw_proto=1 actions=controller(userdata=00.00.00.12.00.00.00.00)`,
      `table=32, priority=110, ${c}, metadata=0x1,dl_dst=00:00:00:00:00:aa,dl_type=0x800,nw_proto=6 actions=controller(userdata=00.00.00.12.00.00.00.00)`,
      `table=32, priority=110, ${c}, metadata=0x1,dl_dst=00:00:00:00:00:aa,dl_type=0x86dd,nw_proto=58 actions=controller(userdata=00.00.00.12.00.00.00.00)`,
      `table=32, priority=110, ${c}, metadata=0x1,dl_dst=00:00:00:00:00:aa,dl_type=0x86dd,nw_proto=6 actions=controller(userdata=00.00.00.12.00.00.00.00)`,
    ] },
  // Two disjunctions: clause flows carry conjunction() with cookie 0, the conj_id flow the actions.
  { row: row('ingress', 17, 100, 'ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}', 'ct_commit { ct_mark.blocked = 0; }; next;'),
    expected: [
      'table=25, priority=100, cookie=0, metadata=0x1,dl_type=0x800,nw_proto=6,nw_src=10.0.0.1 actions=conjunction(1,1/2)',
      'table=25, priority=100, cookie=0, metadata=0x1,dl_type=0x800,nw_proto=6,nw_src=10.0.0.2 actions=conjunction(1,1/2)',
      'table=25, priority=100, cookie=0, metadata=0x1,dl_type=0x800,nw_proto=6,tcp_dst=80 actions=conjunction(1,2/2)',
      'table=25, priority=100, cookie=0, metadata=0x1,dl_type=0x800,nw_proto=6,tcp_dst=443 actions=conjunction(1,2/2)',
      `table=25, priority=100, ${c}, metadata=0x1,conj_id=1,dl_type=0x800,nw_proto=6 actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0/0x1->ct_mark)),resubmit(,26)`,
    ] },
  { row: row('egress', 4, 1000, 'outport == @pg1 && ip4.src == $as1', 'next;'),
    expected: [
      'table=46, priority=1000, cookie=0, metadata=0x1,reg15=0x1,dl_type=0x800 actions=conjunction(1,2/2)',
      'table=46, priority=1000, cookie=0, metadata=0x1,reg15=0x2,dl_type=0x800 actions=conjunction(1,2/2)',
      'table=46, priority=1000, cookie=0, metadata=0x1,dl_type=0x800,nw_src=10.0.0.1 actions=conjunction(1,1/2)',
      'table=46, priority=1000, cookie=0, metadata=0x1,dl_type=0x800,nw_src=10.0.0.2 actions=conjunction(1,1/2)',
      `table=46, priority=1000, ${c}, metadata=0x1,conj_id=1,dl_type=0x800 actions=resubmit(,47)`,
    ] },
  // Registers and bit ranges in match and actions.
  { row: row('ingress', 10, 90, 'reg9[2..3] == 2 && xxreg0[0..15] == 0x1234 && flags.loopback', 'reg8[16..31] = 7; flags.loopback = 0; next;'),
    expected: [`table=18, priority=90, ${c}, metadata=0x1,reg3=0x1234/0xffff,reg9=0x8/0xc,reg10=0x1/0x1 actions=set_field:0x7000000000000/0xffff000000000000->xreg4,set_field:0/0x1->reg10,resubmit(,19)`] },
  // Controller actions and their prerequisites.
  { row: row('ingress', 13, 50, 'arp.op == 1 && arp.tpa == 10.0.0.1', 'eth.dst = eth.src; arp.op = 2; outport = inport; flags.loopback = 1; output;'),
    expected: [`table=21, priority=50, ${c}, metadata=0x1,dl_type=0x806,arp_op=1,arp_tpa=10.0.0.1 actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:2->arp_op,move:NXM_NX_REG14[]->NXM_NX_REG15[],set_field:0x1/0x1->reg10,resubmit(,37)`] },
  { row: row('ingress', 14, 100, 'ip4 && udp.dst == 67', 'reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1, lease_time = 3600); next;'),
    expected: [`table=22, priority=100, ${c}, metadata=0x1,dl_type=0x800,nw_proto=17,udp_dst=67 actions=controller(userdata=00.00.00.02.00.00.00.00.00.01.de.10.00.00.00.63.0a.00.00.05.03.04.0a.00.00.01.33.04.00.00.0e.10,pause),resubmit(,23)`] },
  // Routers: the DNAT zone, and a datapath group yields one set of flows per datapath.
  { row: row('ingress', 4, 100, 'ip4.dst == 172.16.0.10', 'ct_dnat(10.0.0.5);', { logical_datapath: ['lr1'] }),
    expected: [`table=12, priority=100, ${c}, metadata=0x2,dl_type=0x800,nw_dst=172.16.0.10 actions=ct(commit,table=13,zone=NXM_NX_REG11[0..15],nat(dst=10.0.0.5))`] },
  { row: row('ingress', 5, 0, '1', 'next;', { logical_datapath: [], logical_dp_group: ['grp'] }),
    expected: [`table=13, priority=0, ${c}, metadata=0x1 actions=resubmit(,14)`, `table=13, priority=0, ${c}, metadata=0x7 actions=resubmit(,14)`] },
  // A port unknown in this datapath never matches; an action loading it loads 0 (as OVN).
  { row: row('ingress', 0, 50, 'inport == "nowhere"', 'next;'), expected: [] },
  { row: row('ingress', 24, 50, '1', 'outport = "nowhere"; output;'),
    expected: [`table=32, priority=50, ${c}, metadata=0x1 actions=set_field:0->reg15,resubmit(,37)`] },
  // Errors name the flow and never produce part of it.
  { row: row('ingress', 0, 50, 'ip4.src == ', 'next;'),
    expected: [`error: Logical_Flow ${uuid} (ingress table 0 priority 50): match: Syntax error at end of input expecting constant. (at offset 11)`] },
  { row: row('ingress', 0, 50, '1', 'next(pipeline=sideways);'),
    expected: [`error: Logical_Flow ${uuid} (ingress table 0 priority 50): actions: Syntax error at \`sideways' expecting "ingress" or "egress".`] },
  { row: row('ingress', 0, 50, '1', 'flags.localnet = 1; next;'),
    expected: [`error: Logical_Flow ${uuid} (ingress table 0 priority 50): actions: Syntax error at \`flags.localnet' expecting field name.`] },
  { row: row('ingress', 0, 50, '1', 'next;', { logical_datapath: ['nope'] }),
    expected: [`error: Logical_Flow ${uuid} (ingress table 0 priority 50): unknown datapath nope.`] },
  { row: row('ingress', 29, 50, '1', 'next;'),
    expected: [`error: Logical_Flow ${uuid} (ingress table 29 priority 50): table_id 29 is outside 0..28.`] },
];

t.test('golden logical flows', async (t) => {
  for (const k of cases) t.same(text(k.row), [...k.expected].sort(), `${k.row.match} | ${k.row.actions}`);
});

t.test('conjunction ids come from the caller\'s allocator, per flow', async (t) => {
  const ctx = context();
  const r1 = row('ingress', 17, 100, 'ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}', 'next;');
  const first = compileLogicalFlow(r1, ctx);
  const second = compileLogicalFlow(r1, ctx);
  if ('error' in first || 'error' in second) {
    t.fail('compile failed');
    return;
  }
  t.equal(first.conjunctionsN, 1);
  t.ok(second.flows.some((f) => f.match.get('conj_id')?.value === 2n), 'the second flow uses conj_id 2');
  t.ok(second.flows.some((f) => f.actions.some((a) => a.kind === 'conjunction' && a.id === 2)));
});

t.test('flows for ports not related to this chassis are skipped on switches', async (t) => {
  const ctx = context({ isRelatedPort: (_dp, key) => key === 1 });
  t.same(text(row('ingress', 0, 50, 'inport == "lsp2"', 'next;'), ctx), []);
  t.equal(text(row('ingress', 0, 50, 'inport == "lsp1"', 'next;'), ctx).length, 1);
  t.equal(text(row('ingress', 0, 50, 'outport == "lsp2"', 'next;'), ctx).length, 1, 'outport is not filtered in ingress');
});

t.test('the cookie is the first 32 bits of the UUID; conjunction clauses get cookie 0', async (t) => {
  const r = compileLogicalFlow({ ...row('ingress', 0, 1, '1', 'next;'), _uuid: 'ffffffff-1111-2222-3333-444444444444' }, context());
  t.ok('flows' in r && r.flows[0]?.cookie === 0xffffffffn);
});

t.test('compilation is pure: the same row and context give equal flows', async (t) => {
  for (const k of cases) t.same(text(k.row), text(k.row));
});

t.test('the memo gives the flows a fresh compile gives, and never shares port-dependent rows', async (t) => {
  const ports2: Record<string, Record<string, number>> = { ls1: { p: 1, _MC_flood: 0x8000 }, ls2: { p: 9, _MC_flood: 0x8000 } };
  const base = (): FlowCompileContext => context({ lookupPort: (dp, n) => ports2[dp]?.[n], conjIdOfs: () => 0 });
  const memoCtx = { ...base(), memo: createCompileMemo() };
  const rows = [
    ...cases.map((k) => k.row),
    row('ingress', 0, 50, 'inport == "p"', 'next;', { logical_datapath: [], logical_dp_group: ['grp'] }),
    row('ingress', 24, 50, '1', 'outport = "p"; output;', { logical_datapath: [], logical_dp_group: ['grp'] }),
    row('ingress', 24, 50, 'nd || nd_ra || nd_rs || mldv1 || mldv2', 'next;', { logical_datapath: [], logical_dp_group: ['grp'] }),
    row('ingress', 6, 100, 'ip4.src == {1.1.1.1, 2.2.2.2} && tcp.dst == {1, 2}', 'next;', { logical_datapath: [], logical_dp_group: ['grp'] }),
  ];
  for (const pass of [1, 2]) {
    for (const r of rows) t.same(text(r, memoCtx), text(r, base()), `pass ${pass}: ${r.match} | ${r.actions}`);
  }
  t.ok(memoCtx.memo.entries > 0, `${memoCtx.memo.entries} rows memoized`);
  const portRow = text(rows[rows.length - 4] as LogicalFlowRow, memoCtx).join('\n');
  t.match(portRow, /metadata=0x1,reg14=0x1 /);
  t.match(portRow, /metadata=0x7,reg14=0x9 /);
  const loadRow = text(rows[rows.length - 3] as LogicalFlowRow, memoCtx).join('\n');
  t.match(loadRow, /metadata=0x1 actions=set_field:0x1->reg15/);
  t.match(loadRow, /metadata=0x7 actions=set_field:0x9->reg15/);
});

t.test('datapaths not local to this chassis are skipped, not errors', async (t) => {
  const ctx = context({ isLocalDatapath: (u) => u === 'ls2' });
  t.same(text(row('ingress', 5, 0, '1', 'next;', { logical_datapath: [], logical_dp_group: ['grp'] }), ctx),
    ['table=13, priority=0, cookie=0xa1b2c3d4, metadata=0x7 actions=resubmit(,14)']);
  t.same(text(row('ingress', 5, 0, '1', 'next;', { logical_datapath: ['nope'] }), ctx), [], 'an unknown datapath that is not local is skipped too');
});

t.test('ports not related to this chassis: leaving their matches out early equals dropping their flows after', async (t) => {
  // The dumb reference: compile with every port related, then drop each flow whose inport
  // (ingress) or outport (egress) is a port outside the related set. The compiler instead
  // leaves such matches out as it builds them (and does not build single-disjunction port
  // alternatives at all); both must give the same flows, in the same order, for every subset.
  const keys: Record<string, number> = { p1: 1, p2: 2, p3: 3, p4: 4, none: 0 };
  const rows = [
    row('egress', 4, 1001, 'outport == @pg && ip4 && tcp.dst == 22', 'next;'),
    row('egress', 4, 1002, 'outport == @pg && ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}', 'next;'),
    row('egress', 4, 1003, 'outport == @pg && ip4.src == {10.0.0.1, 10.0.0.2}', 'next;'),
    row('ingress', 1, 50, 'inport == {"p1", "p3"} && eth.src == {00:00:00:00:00:01, 00:00:00:00:00:03}', 'next;'),
    row('ingress', 1, 60, 'inport == @pg && (inport == "p2" || eth.src == 00:00:00:00:00:02)', 'next;'),
    row('ingress', 1, 70, 'inport == "p4" || inport == "none" || ip4', 'next;'),
    row('ingress', 24, 50, 'eth.dst == 00:00:00:00:00:01', 'outport = "p1"; output;'),
  ];
  const base = (related?: ReadonlySet<number>): FlowCompileContext => context({
    lookupPort: (_dp, n) => keys[n],
    portGroup: (n) => (n === 'pg' ? ['p1', 'p2', 'p3', 'p4', 'p9'] : undefined),
    ...(related === undefined ? {} : { isRelatedPort: (_dp: string, key: number) => related.has(key) }),
  });
  const flowsOf = (r: LogicalFlowRow, ctx: FlowCompileContext): FlowSpec[] => {
    const out = compileLogicalFlow(r, ctx);
    if ('error' in out) throw new Error(out.error);
    return out.flows;
  };
  let compared = 0;
  let dropped = 0;
  for (let subset = 0; subset < 16; subset++) {
    const related = new Set([1, 2, 3, 4].filter((k) => (subset & (1 << (k - 1))) !== 0));
    for (const r of rows) {
      const reg = r.pipeline === 'ingress' ? 'reg14' : 'reg15';
      const all = flowsOf(r, base());
      const reference = all.filter((f) => {
        const port = f.match.get(reg);
        return port === undefined || port.value === 0n || related.has(Number(port.value));
      });
      dropped += all.length - reference.length;
      t.same(flowsOf(r, base(related)).map((f) => formatFlow(f)), reference.map((f) => formatFlow(f)), `${r.match} with ports ${[...related].join(',')} related`);
      compared++;
    }
  }
  t.ok(dropped > 100, `the subsets left out flows (${dropped} over ${compared} compiles)`);
});

t.test('an address set member that is not an address is skipped, as ovn-controller reads the set; the rest of the set stands', async (t) => {
  // A router's $_rtr_lb_N_ip4 holds a template load balancer's "^VIP" beside real VIPs.
  const ctx = context({ addressSet: (n) => (n === 'vips' ? ['10.0.0.1', '^VIP', '10.0.0.8/29 trailing', 'not-an-address'] : n === 'none' ? ['^VIP'] : undefined) });
  t.same(text(row('ingress', 3, 90, 'ip4.dst == $vips', 'next;'), ctx), [
    `table=11, priority=90, ${c}, metadata=0x1,dl_type=0x800,nw_dst=10.0.0.1 actions=resubmit(,12)`,
    `table=11, priority=90, ${c}, metadata=0x1,dl_type=0x800,nw_dst=10.0.0.8/29 actions=resubmit(,12)`,
  ], 'the addresses (the first token of each member) match; the template text is left out');
  t.same(text(row('ingress', 3, 90, 'ip4.dst == $none', 'next;'), ctx), [], 'a set left empty matches nothing');
});
