// Goal: the logical field table carries OVN 23.03's names, overlaps, widths and prerequisites.
// Method: dump the table in test-ovn.c's "dump-symtab" form and compare with tests/ovn.at's
// "registers" and "conntrack fields" listings; spot-check the OpenFlow mapping the issue names.

import t from 'tap';
import { buildSymtab, type ExprSymbol } from '../../agent/expr/symbols.js';

const symtab = buildSymtab();

function dump(s: ExprSymbol): string {
  switch (s.kind) {
    case 'subfield': {
      const hi = s.parentOfs + s.width - 1;
      return `${s.name} = ${s.parent}[${s.width === 1 ? s.parentOfs : `${s.parentOfs}..${hi}`}]`;
    }
    case 'field':
    case 'string':
      return `${s.name} = ${s.of}`;
    case 'predicate':
      return `${s.name} = ${s.expansion}`;
  }
}

function listing(prefix: RegExp): string[] {
  return [...symtab.values()].filter((s) => prefix.test(s.name)).map(dump).sort();
}

t.test('registers (tests/ovn.at), with our OpenFlow names for the real fields', async (t) => {
  t.same(listing(/reg/), [
    'reg0 = xxreg0[96..127]', 'reg1 = xxreg0[64..95]', 'reg2 = xxreg0[32..63]', 'reg3 = xxreg0[0..31]',
    'reg4 = xxreg1[96..127]', 'reg5 = xxreg1[64..95]', 'reg6 = xxreg1[32..63]', 'reg7 = xxreg1[0..31]',
    'reg8 = xreg4[32..63]', 'reg9 = xreg4[0..31]',
    'xreg0 = xxreg0[64..127]', 'xreg1 = xxreg0[0..63]', 'xreg2 = xxreg1[64..127]', 'xreg3 = xxreg1[0..63]',
    'xreg4 = xreg4', 'xxreg0 = xxreg0', 'xxreg1 = xxreg1',
  ]);
});

t.test('conntrack fields (tests/ovn.at)', async (t) => {
  t.same(listing(/^ct/), [
    'ct.dnat = ct_state[7]', 'ct.est = ct_state[1]', 'ct.inv = ct_state[4]', 'ct.new = ct_state[0]',
    'ct.rel = ct_state[2]', 'ct.rpl = ct_state[3]', 'ct.snat = ct_state[6]', 'ct.trk = ct_state[5]',
    'ct_label = ct_label', 'ct_label.blocked = ct_label[0]', 'ct_label.ecmp_reply_eth = ct_label[32..79]',
    'ct_label.ecmp_reply_port = ct_label[80..95]', 'ct_label.force_snat = ct_label[3]',
    'ct_label.label = ct_label[96..127]', 'ct_label.natted = ct_label[1]', 'ct_label.skip_snat = ct_label[2]',
    'ct_mark = ct_mark', 'ct_mark.blocked = ct_mark[0]', 'ct_mark.ecmp_reply_port = ct_mark[16..31]',
    'ct_mark.force_snat = ct_mark[3]', 'ct_mark.natted = ct_mark[1]', 'ct_mark.skip_snat = ct_mark[2]',
    'ct_state = ct_state',
  ]);
  for (const s of symtab.values()) {
    if (s.name.startsWith('ct.')) t.equal(s.prereqs, s.name === 'ct.trk' ? null : 'ct.trk', `${s.name} prerequisite`);
  }
});

t.test('OpenFlow mapping, widths and prerequisites the compiler relies on', async (t) => {
  const of = (name: string): string | undefined => {
    const s = symtab.get(name);
    return s !== undefined && (s.kind === 'field' || s.kind === 'string') ? s.of : undefined;
  };
  t.equal(of('inport'), 'reg14');
  t.equal(of('outport'), 'reg15');
  t.equal(of('flags'), 'reg10');
  t.equal(of('eth.src'), 'eth_src');
  t.equal(of('ip4.src'), 'ipv4_src');
  t.same(symtab.get('flags.loopback'), { kind: 'subfield', name: 'flags.loopback', width: 1, parent: 'flags',
    parentOfs: 0, level: 'ordinal', prereqs: null });
  t.equal(symtab.get('ip4.src')?.prereqs, 'ip4');
  t.equal(symtab.get('tcp.dst')?.prereqs, 'tcp');
  t.equal(symtab.get('nd.sll')?.prereqs, 'nd_ns');
  t.equal(symtab.get('vlan.vid')?.prereqs, 'vlan.present');
  const widths: Record<string, number> = {
    'eth.src': 48, 'eth.type': 16, 'vlan.tci': 16, 'ip.proto': 8, 'ip.dscp': 6, 'ip.ecn': 2, 'ip.ttl': 8,
    'ip6.src': 128, 'ip6.label': 20, 'ip.frag': 8, 'tcp.flags': 16, 'ct_label': 128, 'ct_state': 32, 'xreg4': 64,
  };
  for (const [name, w] of Object.entries(widths)) t.equal(symtab.get(name)?.width, w, `${name} width`);
  const cross = [...symtab.values()].filter((s) => s.kind === 'field' && s.mustCrossproduct).map((s) => s.name);
  t.same(cross.sort(), ['eth.type', 'icmp6.code', 'icmp6.type', 'ip.proto']);
  for (const s of symtab.values()) {
    if (s.prereqs !== null) t.ok(symtab.has(s.prereqs.split(' ')[0] as string), `${s.name}: prerequisite names a symbol`);
  }
});
