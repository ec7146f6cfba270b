// Goal: whole Logical_Flow rows compile to exactly the flows a real ovn-controller 23.03.1
// installed for them. Method: rows and flows captured from a real run (ovn-northd 23.03.1 on a
// switch ls1 with ports lsp1..lsp3, a load balancer and port-group ACLs, patched to router lr1;
// ovn-controller 23.03.1 on a chassis binding lsp1 and lsp2; `ovs-ofctl dump-flows br-int`).
// Actions must equal the dump's text; each whole flow is compared after `ovs-ofctl parse-flow`
// puts our match in its order (when ovs-ofctl is installed). The conjunction row checks the
// clause structure; conjunction ids are an allocation detail and are compared modulo renaming.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { compileLogicalFlow, formatActions, formatFlow, type FlowCompileContext, type LogicalFlowRow } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';

interface RealCase {
  readonly uuid: string;
  /** Datapath tunnel key: 1 is switch ls1, 2 is router lr1. */
  readonly dp: number;
  readonly pipeline: 'ingress' | 'egress';
  readonly table: number;
  readonly priority: number;
  readonly match: string;
  readonly actions: string;
  /** `ovs-ofctl dump-flows --no-stats` lines of the real ovn-controller. */
  readonly real: readonly string[];
}

const realCases: readonly RealCase[] = [
  {
    uuid: '3f2f4ff3-76ea-4d7b-802e-7f867ea76b60', dp: 1, pipeline: 'egress', table: 4, priority: 65532,
    match: "!ct.est && ct.rel && !ct.new && !ct.inv && ct_mark.blocked == 0",
    actions: "ct_commit_nat;",
    real: [
      'cookie=0x3f2f4ff3, table=46, priority=65532,ct_state=-new-est+rel-inv+trk,ct_mark=0/0x1,ip,metadata=0x1 actions=ct(commit,table=47,zone=NXM_NX_REG13[0..15],nat)',
      'cookie=0x3f2f4ff3, table=46, priority=65532,ct_state=-new-est+rel-inv+trk,ct_mark=0/0x1,ipv6,metadata=0x1 actions=ct(commit,table=47,zone=NXM_NX_REG13[0..15],nat)'
    ],
  },
  {
    uuid: '6b2d5320-c5f4-4022-bc3f-8d25c8b7d1fa', dp: 1, pipeline: 'ingress', table: 15, priority: 90,
    match: "ip && reg0[12] == 1",
    actions: "ct_snat;",
    real: [
      'cookie=0x6b2d5320, table=23, priority=90,ipv6,reg0=0x1000/0x1000,metadata=0x1 actions=ct(table=24,zone=NXM_NX_REG12[0..15],nat)',
      'cookie=0x6b2d5320, table=23, priority=90,ip,reg0=0x1000/0x1000,metadata=0x1 actions=ct(table=24,zone=NXM_NX_REG12[0..15],nat)'
    ],
  },
  {
    uuid: '467ebaf0-4e6e-46a0-8a40-39fc26c88071', dp: 1, pipeline: 'ingress', table: 25, priority: 70,
    match: "eth.mcast",
    actions: "outport = \"_MC_flood\"; output;",
    real: [
      'cookie=0x467ebaf0, table=33, priority=70,metadata=0x1,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00 actions=set_field:0x8000->reg15,resubmit(,37)'
    ],
  },
  {
    uuid: 'fa3b7089-4af4-4259-9e7a-1d3ad8030de1', dp: 2, pipeline: 'ingress', table: 17, priority: 1,
    match: "ip6",
    actions: "get_nd(outport, xxreg0); next;",
    real: [
      'cookie=0xfa3b7089, table=25, priority=1,ipv6,metadata=0x2 actions=set_field:00:00:00:00:00:00->eth_dst,resubmit(,66),resubmit(,26)'
    ],
  },
  {
    uuid: 'ea963b69-f26d-4c03-b8dc-a8320b24984b', dp: 2, pipeline: 'ingress', table: 2, priority: 90,
    match: "arp",
    actions: "put_arp(inport, arp.spa, arp.sha); next;",
    real: [
      'cookie=0xea963b69, table=10, priority=90,arp,metadata=0x2 actions=push:NXM_NX_REG0[],push:NXM_OF_ETH_SRC[],push:NXM_NX_ARP_SHA[],push:NXM_OF_ARP_SPA[],pop:NXM_NX_REG0[],pop:NXM_OF_ETH_SRC[],controller(userdata=00.00.00.01.00.00.00.00),pop:NXM_OF_ETH_SRC[],pop:NXM_NX_REG0[],resubmit(,11)'
    ],
  },
  {
    uuid: 'a9e04262-f423-4111-9c25-b824643fdb5e', dp: 1, pipeline: 'ingress', table: 19, priority: 50,
    match: "arp.tpa == 10.0.0.11 && arp.op == 1",
    actions: "eth.dst = eth.src; eth.src = 00:00:00:00:00:01; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = 00:00:00:00:00:01; arp.tpa = arp.spa; arp.spa = 10.0.0.11; outport = inport; flags.loopback = 1; output;",
    real: [
      'cookie=0xa9e04262, table=27, priority=50,arp,metadata=0x1,arp_tpa=10.0.0.11,arp_op=1 actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:00:00:00:00:00:01->eth_src,set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:00:00:00:00:00:01->arp_sha,move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:10.0.0.11->arp_spa,move:NXM_NX_REG14[]->NXM_NX_REG15[],set_field:0x1/0x1->reg10,resubmit(,37)'
    ],
  },
  {
    uuid: '0f0086d4-6ed0-4927-a0ea-a65edac3890b', dp: 2, pipeline: 'ingress', table: 3, priority: 100,
    match: "ip6.dst == fe80::200:ff:fe00:ff01 && udp.src == 547 && udp.dst == 546",
    actions: "reg0 = 0; handle_dhcpv6_reply;",
    real: [
      'cookie=0xf0086d4, table=11, priority=100,udp6,metadata=0x2,ipv6_dst=fe80::200:ff:fe00:ff01,tp_src=547,tp_dst=546 actions=set_field:0/0xffffffff000000000000000000000000->xxreg0,controller(userdata=00.00.00.13.00.00.00.00)'
    ],
  },
  {
    uuid: '3dcc6ebc-1d84-4095-a8c1-03882f50abaa', dp: 2, pipeline: 'ingress', table: 2, priority: 90,
    match: "nd_na",
    actions: "put_nd(inport, nd.target, nd.tll); next;",
    real: [
      'cookie=0x3dcc6ebc, table=10, priority=90,icmp6,metadata=0x2,nw_ttl=255,icmp_type=136,icmp_code=0 actions=push:NXM_NX_XXREG0[],push:NXM_OF_ETH_SRC[],push:NXM_NX_ND_TLL[],push:NXM_NX_ND_TARGET[],pop:NXM_NX_XXREG0[],pop:NXM_OF_ETH_SRC[],controller(userdata=00.00.00.04.00.00.00.00),pop:NXM_OF_ETH_SRC[],pop:NXM_NX_XXREG0[],resubmit(,11)'
    ],
  },
  {
    uuid: 'c09670c2-a674-4cf3-bb97-2b3c084f4e72', dp: 2, pipeline: 'ingress', table: 1, priority: 100,
    match: "inport == \"lrp1\" && arp.spa == 10.0.0.0/24 && arp.op == 1",
    actions: "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); next;",
    real: [
      'cookie=0xc09670c2, table=9, priority=100,arp,reg14=0x1,metadata=0x2,arp_spa=10.0.0.0/24,arp_op=1 actions=push:NXM_NX_REG0[],push:NXM_OF_ETH_SRC[],push:NXM_NX_ARP_SHA[],push:NXM_OF_ARP_SPA[],pop:NXM_NX_REG0[],pop:NXM_OF_ETH_SRC[],set_field:0/0x40->reg10,resubmit(,67),move:NXM_NX_REG10[6]->OXM_OF_PKT_REG4[2],pop:NXM_OF_ETH_SRC[],pop:NXM_NX_REG0[],resubmit(,10)'
    ],
  },
  {
    uuid: 'ba4a2278-04ad-4244-b7d8-97de142c2235', dp: 1, pipeline: 'ingress', table: 25, priority: 80,
    match: "flags[1] == 0 && arp.op == 1 && arp.tpa == 10.0.0.1",
    actions: "clone {outport = \"ls1-lr1\"; output; }; outport = \"_MC_flood_l2\"; output;",
    real: [
      'cookie=0xba4a2278, table=33, priority=80,arp,reg10=0/0x2,metadata=0x1,arp_tpa=10.0.0.1,arp_op=1 actions=clone(set_field:0x4->reg15,resubmit(,37)),set_field:0x8004->reg15,resubmit(,37)'
    ],
  },
  {
    uuid: 'd124ac44-18e3-4dff-ae23-ebf5e3814206', dp: 2, pipeline: 'ingress', table: 13, priority: 74,
    match: "ip4.dst == 10.0.0.0/24",
    actions: "ip.ttl--; reg8[0..15] = 0; reg0 = ip4.dst; reg1 = 10.0.0.1; eth.src = 00:00:00:00:ff:01; outport = \"lrp1\"; flags.loopback = 1; next;",
    real: [
      'cookie=0xd124ac44, table=21, priority=74,ip,metadata=0x2,nw_dst=10.0.0.0/24 actions=dec_ttl(),set_field:0/0xffff00000000->xreg4,move:NXM_OF_IP_DST[]->NXM_NX_XXREG0[96..127],set_field:0xa0000010000000000000000/0xffffffff0000000000000000->xxreg0,set_field:00:00:00:00:ff:01->eth_src,set_field:0x1->reg15,set_field:0x1/0x1->reg10,resubmit(,22)'
    ],
  },
  {
    uuid: '3cfb2dd5-341b-41ee-acd0-9db79389e18c', dp: 1, pipeline: 'ingress', table: 6, priority: 120,
    match: "reg0[2] == 1 && ip4.dst == 10.0.0.100 && tcp.dst == 80",
    actions: "reg1 = 10.0.0.100; reg2[0..15] = 80; ct_lb_mark;",
    real: [
      'cookie=0x3cfb2dd5, table=14, priority=120,tcp,reg0=0x4/0x4,metadata=0x1,nw_dst=10.0.0.100,tp_dst=80 actions=set_field:0xa0000640000000000000000/0xffffffff0000000000000000->xxreg0,set_field:0x5000000000/0xffff00000000->xxreg0,ct(table=15,zone=NXM_NX_REG13[0..15],nat)'
    ],
  },
  {
    uuid: '144a6c8d-6848-4e9a-b214-5f0d698a31ad', dp: 2, pipeline: 'ingress', table: 17, priority: 1,
    match: "ip4",
    actions: "get_arp(outport, reg0); next;",
    real: [
      'cookie=0x144a6c8d, table=25, priority=1,ip,metadata=0x2 actions=push:NXM_NX_REG0[],push:NXM_NX_XXREG0[96..127],pop:NXM_NX_REG0[],set_field:00:00:00:00:00:00->eth_dst,resubmit(,66),pop:NXM_NX_REG0[],resubmit(,26)'
    ],
  },
  {
    uuid: '4f366415-2f1d-4a4e-be89-e6c014018f42', dp: 1, pipeline: 'ingress', table: 6, priority: 100,
    match: "reg0[0] == 1",
    actions: "ct_next;",
    real: [
      'cookie=0x4f366415, table=14, priority=100,ipv6,reg0=0x1/0x1,metadata=0x1 actions=ct(table=15,zone=NXM_NX_REG13[0..15])',
      'cookie=0x4f366415, table=14, priority=100,ip,reg0=0x1/0x1,metadata=0x1 actions=ct(table=15,zone=NXM_NX_REG13[0..15])'
    ],
  },
  {
    uuid: '2725f472-7b32-44a8-8f18-8faa303ead9c', dp: 1, pipeline: 'egress', table: 8, priority: 0,
    match: "1",
    actions: "reg0[15] = check_out_port_sec(); next;",
    real: [
      'cookie=0x2725f472, table=50, priority=0,metadata=0x1 actions=set_field:0/0x1000->reg10,resubmit(,75),move:NXM_NX_REG10[12]->NXM_NX_XXREG0[111],resubmit(,51)'
    ],
  },
  {
    uuid: 'e4a022a4-41c0-495a-b08f-66d607137bc6', dp: 2, pipeline: 'ingress', table: 1, priority: 100,
    match: "nd_na",
    actions: "reg9[2] = lookup_nd(inport, nd.target, nd.tll); next;",
    real: [
      'cookie=0xe4a022a4, table=9, priority=100,icmp6,metadata=0x2,nw_ttl=255,icmp_type=136,icmp_code=0 actions=push:NXM_NX_XXREG0[],push:NXM_OF_ETH_SRC[],push:NXM_NX_ND_TLL[],push:NXM_NX_ND_TARGET[],pop:NXM_NX_XXREG0[],pop:NXM_OF_ETH_SRC[],set_field:0/0x40->reg10,resubmit(,67),move:NXM_NX_REG10[6]->OXM_OF_PKT_REG4[2],pop:NXM_OF_ETH_SRC[],pop:NXM_NX_XXREG0[],resubmit(,10)'
    ],
  },
  {
    uuid: '13443879-ae09-4bf0-b3d0-6037714b6774', dp: 1, pipeline: 'ingress', table: 14, priority: 100,
    match: "ip && ct.trk",
    actions: "reg0[6] = chk_lb_hairpin(); reg0[12] = chk_lb_hairpin_reply(); next;",
    real: [
      'cookie=0x13443879, table=22, priority=100,ct_state=+trk,ip,metadata=0x1 actions=set_field:0/0x80->reg10,resubmit(,68),move:NXM_NX_REG10[7]->NXM_NX_XXREG0[102],set_field:0/0x80->reg10,resubmit(,69),move:NXM_NX_REG10[7]->NXM_NX_XXREG0[108],resubmit(,23)',
      'cookie=0x13443879, table=22, priority=100,ct_state=+trk,ipv6,metadata=0x1 actions=set_field:0/0x80->reg10,resubmit(,68),move:NXM_NX_REG10[7]->NXM_NX_XXREG0[102],set_field:0/0x80->reg10,resubmit(,69),move:NXM_NX_REG10[7]->NXM_NX_XXREG0[108],resubmit(,23)'
    ],
  },
  {
    uuid: '8efbc4da-f8a8-445a-9b58-74777cb3e526', dp: 1, pipeline: 'egress', table: 4, priority: 2001,
    match: "reg0[8] == 1 && (outport == @pg1 && ip4.src == {10.0.0.11, 10.0.0.12, 10.0.0.13} && tcp.dst == {80, 443})",
    actions: "next;",
    real: [
      'table=46, priority=2001,tcp,reg0=0x100/0x100,metadata=0x1,nw_src=10.0.0.11 actions=conjunction(535813469,1/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,metadata=0x1,nw_src=10.0.0.13 actions=conjunction(535813469,1/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,metadata=0x1,nw_src=10.0.0.12 actions=conjunction(535813469,1/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,reg15=0x1,metadata=0x1 actions=conjunction(535813469,2/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,reg15=0x2,metadata=0x1 actions=conjunction(535813469,2/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,metadata=0x1,tp_dst=443 actions=conjunction(535813469,3/3)',
      'table=46, priority=2001,tcp,reg0=0x100/0x100,metadata=0x1,tp_dst=80 actions=conjunction(535813469,3/3)',
      'cookie=0x8efbc4da, table=46, priority=2001,conj_id=535813469,tcp,reg0=0x100/0x100,metadata=0x1 actions=resubmit(,47)',
    ],
  },
];

const symtab = buildSymtab();
const dpUuids: Record<number, string> = { 1: 'ls1', 2: 'lr1' };
const portKeys: Record<string, Record<string, number>> = {
  ls1: { lsp1: 1, lsp2: 2, lsp3: 3, 'ls1-lr1': 4, _MC_flood: 0x8000, _MC_unknown: 0x8001, _MC_flood_l2: 0x8004 },
  lr1: { lrp1: 1, _MC_flood: 0x8000 },
};

function context(): FlowCompileContext {
  return {
    symtab,
    datapath: (u) => (u === 'ls1' ? { tunnelKey: 1, isSwitch: true } : u === 'lr1' ? { tunnelKey: 2, isSwitch: false } : undefined),
    lookupPort: (dp, n) => portKeys[dp]?.[n],
    portGroupIn: (dp, n) => (dp === 'ls1' && n === 'pg1' ? ['lsp1', 'lsp2'] : undefined),
    addressSet: (n) => (n === 'svc_monitor_mac' ? ['72:72:a7:68:c6:51'] : undefined),
    isChassisResident: (p) => p === 'lsp1' || p === 'lsp2',
    // The datapath supports all-zero SNAT, so ct_commit carries nat(src), as ovn-controller found.
    ctZeroSnat: true,
    conjIdOfs: () => 0,
  };
}

function rowOf(c: RealCase): LogicalFlowRow {
  return {
    _uuid: c.uuid, logical_datapath: [dpUuids[c.dp] ?? ''], logical_dp_group: [], pipeline: c.pipeline,
    table_id: c.table, priority: c.priority, match: c.match, actions: c.actions,
  };
}

/** The dump's "table=…, priority=…,match actions=…" as {key, actions}, cookie kept. */
function splitReal(line: string): { cookie: string; table: string; priority: string; match: string; actions: string } {
  const m = /^(?:cookie=(0x[0-9a-f]+), )?table=(\d+), priority=(\d+),?(.*?) actions=(.*)$/.exec(line);
  if (m === null) throw new Error(`unparsable dump line ${line}`);
  return { cookie: m[1] ?? '0', table: m[2] ?? '', priority: m[3] ?? '', match: m[4] ?? '', actions: m[5] ?? '' };
}

const renameConj = (s: string): string => s.replace(/conjunction\(\d+,/g, 'conjunction(N,').replace(/conj_id=\d+/g, 'conj_id=N');

t.test('actions, tables, priorities and cookies equal the real ovn-controller\'s', async (t) => {
  for (const c of realCases) {
    const r = compileLogicalFlow(rowOf(c), context());
    if ('error' in r) {
      t.fail(`${c.actions}: ${r.error}`);
      continue;
    }
    const ours = r.flows.map((f) => `table=${f.table} priority=${f.priority} cookie=0x${f.cookie.toString(16)} actions=${renameConj(formatActions(f.actions))}`).sort();
    const real = c.real.map(splitReal).map((x) => `table=${x.table} priority=${x.priority} cookie=${x.cookie === '0' ? '0x0' : x.cookie} actions=${renameConj(x.actions)}`).sort();
    t.same(ours, real, `${c.match} | ${c.actions}`);
  }
});

t.test('whole flows equal the real ones once ovs-ofctl orders our match', async (t) => {
  if (spawnSync('ovs-ofctl', ['--version']).status !== 0) {
    t.comment('ovs-ofctl is not installed: matches not compared');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'ovnts-real-'));
  try {
    for (const c of realCases) {
      const r = compileLogicalFlow(rowOf(c), context());
      if ('error' in r) {
        t.fail(r.error);
        continue;
      }
      const file = join(dir, 'f.txt');
      writeFileSync(file, r.flows.map((f) => formatFlow(f)).join('\n') + '\n');
      const p = spawnSync('ovs-ofctl', ['-O', 'OpenFlow15', 'parse-flows', file], { encoding: 'utf8' });
      t.equal(p.status, 0, p.stderr);
      const ours = p.stdout.split('\n').filter((l) => l.startsWith('OFPT_FLOW_MOD')).map((l) => {
        const m = /ADD table:(\d+) priority=(\d+),?(.*?) actions=/.exec(l);
        return renameConj(`${m?.[1]} ${m?.[2]} ${m?.[3]}`);
      }).sort();
      const real = c.real.map(splitReal).map((x) => renameConj(`${x.table} ${x.priority} ${x.match}`)).sort();
      t.same(ours, real, `${c.match} | ${c.actions}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
