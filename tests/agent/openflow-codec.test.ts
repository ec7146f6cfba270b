// Goal: the OpenFlow 1.5 codec is exact: decode(encode(x)) equals x for every message kind and
// every action kind in canonical form, and the wire bytes are the ones Open vSwitch expects.
// Method: seeded generators (hundreds of values per kind), golden bytes for a few hand-checked
// messages, and the non-canonical spellings mapped to their canonical forms.

import { spawnSync } from 'node:child_process';
import t from 'tap';
import { decodeActions, encodeActions } from '../../agent/openflow/actions.js';
import { describeError } from '../../agent/openflow/error-names.js';
import { readMatch, writeMatch } from '../../agent/openflow/fields.js';
import { decodeMessage, encodeMessage, type OfMessage } from '../../agent/openflow/messages.js';
import type { GroupSpec, OfAction } from '../../agent/openflow/types.js';
import { Reader, Writer } from '../../agent/openflow/wire.js';
import { actionKinds, genAction, genMatch, genMessage, messageKinds } from '../helpers/ovs-openflow-gen.js';
import { Rng } from '../helpers/seeded-rng.js';

const seed = Number(process.env.OVNTS_SEED ?? 1515);
const perKind = Number(process.env.OVNTS_CASES ?? 200);

t.test('every action kind round-trips', async (t) => {
  const rng = new Rng(seed);
  for (const kind of actionKinds) {
    let bad = 0;
    for (let i = 0; i < perKind && bad === 0; i++) {
      const a = genAction(rng, kind);
      const bytes = encodeActions([a]);
      if (bytes.length % 8 !== 0) {
        t.fail(`${kind}: ${bytes.length} bytes is not a multiple of 8`);
        bad++;
      }
      const back = decodeActions(bytes);
      if (!t.strictSame(back, [a], `${kind} #${i} (seed ${seed})`)) bad++;
    }
    t.equal(bad, 0, `${kind}: ${perKind} cases`);
  }
});

t.test('every message kind round-trips', async (t) => {
  const rng = new Rng(seed + 1);
  for (const kind of messageKinds) {
    let bad = 0;
    for (let i = 0; i < perKind && bad === 0; i++) {
      const m = genMessage(rng, kind);
      const xid = rng.u32();
      const bytes = encodeMessage(m, xid);
      const d = decodeMessage(bytes);
      if (!t.strictSame(d, { version: 6, xid, msg: m }, `${kind} #${i} (seed ${seed})`)) bad++;
    }
    t.equal(bad, 0, `${kind}: ${perKind} cases`);
  }
});

t.test('matches round-trip through ofp_match', async (t) => {
  const rng = new Rng(seed + 2);
  for (let i = 0; i < perKind * 5; i++) {
    const m = genMatch(rng, 12);
    const w = new Writer();
    writeMatch(w, m);
    const bytes = w.finish();
    t.equal(bytes.length % 8, 0);
    const r = new Reader(bytes);
    if (!t.strictSame(readMatch(r), m, `match #${i}`)) break;
    t.equal(r.remaining, 0);
  }
});

t.test('golden bytes', async (t) => {
  // Checked with `ovs-ofctl ofp-print`: "OFPT_HELLO (OF1.5) (xid=0x1): version bitmap: 0x06".
  t.equal(encodeMessage({ kind: 'hello', versions: [6] }, 1).toString('hex'), '060000100000000100010008000000' + '40');
  // OXM in_port=3 (class 0x8000 field 0), NXM reg14=5 (class 0x0001 field 14), masked ipv4_src.
  const w = new Writer();
  writeMatch(w, new Map([
    ['in_port', { value: 3n, mask: 0xffffffffn }],
    ['reg14', { value: 5n, mask: 0xffffffffn }],
    ['ipv4_src', { value: 0x0a000000n, mask: 0xff000000n }],
  ]));
  t.equal(w.finish().toString('hex'), '0001' + '0020' + '8000000400000003' + '00011c0400000005' + '800017080a000000ff000000');
  // resubmit(,9): NXAST_RESUBMIT_TABLE with in_port OFPP_IN_PORT (0xfff8).
  t.equal(encodeActions([{ kind: 'resubmit', table: 9 }]).toString('hex'), 'ffff001000002320000efff809000000');
  // conjunction(7, 2/2) on the wire carries the zero-based clause 1.
  t.equal(encodeActions([{ kind: 'conjunction', id: 7, clause: 1, nClauses: 2 }]).toString('hex'), 'ffff0010000023200022010200000007');
  // sample(...): NXAST_SAMPLE (29), 24 bytes: probability, collector set, domain, point.
  t.equal(encodeActions([{ kind: 'sample', probability: 65535, collectorSetId: 123, obsDomainId: 0x01000005, obsPointId: 0xdeadbeef }]).toString('hex'),
    'ffff001800002320001dffff0000007b01000005deadbeef');
  // ct_state is NXM_NX_CT_STATE (field 105), ct_label NXM_NX_CT_LABEL (108), conj_id (37), xxreg0 (111).
  const w2 = new Writer();
  writeMatch(w2, new Map([['ct_state', { value: 0x21n, mask: 0x23n }]]));
  t.equal(w2.finish().subarray(4, 8).toString('hex'), '0001d308');
  // reg16 and xxreg4 exist only as Nicira experimenter OXMs: class 0xffff, field 17 / 33,
  // length counting the 4-byte experimenter id, then 0x00002320.
  const w3 = new Writer();
  writeMatch(w3, new Map([['reg16', { value: 9n, mask: 0xffffffffn }], ['xxreg4', { value: 1n, mask: (1n << 128n) - 1n }]]));
  t.equal(w3.finish().subarray(4, 40).toString('hex'), 'ffff2208' + '00002320' + '00000009' + 'ffff4214' + '00002320' + '00000000000000000000000000000001');
  t.strictSame(decodeActions(encodeActions([{ kind: 'output_reg', src: { field: 'reg20', start: 0, end: 15 } }])),
    [{ kind: 'output_reg', src: { field: 'reg20', start: 0, end: 15 } }], 'output_reg2 with an experimenter header');
  t.throws(() => encodeActions([{ kind: 'ct', commit: false, zone: { field: 'reg20', start: 0, end: 15 }, exec: [] }]), /no 32-bit NXM header/);
  // push:NXM_OF_ETH_SRC[] (NXAST_STACK_PUSH, 27): the field by its NXM header (class 0, field 2),
  // as Open vSwitch writes a Nicira action's fields; move (OpenFlow 1.5's copy_field) by OXM.
  t.equal(encodeActions([{ kind: 'push', src: { field: 'eth_src', start: 0, end: 47 } }]).toString('hex'), 'ffff00180000232000' + '1b0000' + '00000406' + '0030' + '000000000000');
  t.equal(encodeActions([{ kind: 'move', src: { field: 'eth_src', start: 0, end: 47 }, dst: { field: 'eth_dst', start: 0, end: 47 } }]).toString('hex').slice(24, 40), '8000080680000606');
  t.strictSame(decodeActions(encodeActions([{ kind: 'pop', dst: { field: 'ipv4_src', start: 0, end: 31 } }])), [{ kind: 'pop', dst: { field: 'ipv4_src', start: 0, end: 31 } }], 'NXM_OF_IP_SRC reads back as ipv4_src');
});

t.test('a select group\'s selection_method_param goes on the wire and reads back', async (t) => {
  // OVN's select action with the datapath's symmetric L4 hash: dp_hash with 1 << 32 (the
  // buckets' loads in their canonical form, as they decode).
  const load = (id: bigint): OfAction => ({ kind: 'load', dst: { field: 'xreg4', start: 48, end: 63 }, value: id });
  const group: GroupSpec = {
    groupId: 7, type: 'select', selectionMethod: 'dp_hash', selectionMethodParam: 1n << 32n, buckets: [
      { weight: 100, actions: [load(1n), { kind: 'resubmit', table: 22 }] },
      { weight: 50, actions: [load(2n), { kind: 'resubmit', table: 22 }] },
    ],
  };
  const mod: OfMessage = { kind: 'group_mod', mod: { command: 'add', group } };
  const bytes = encodeMessage(mod, 3);
  // The NTR property: "dp_hash" in 16 bytes, then the parameter as a big-endian u64.
  t.ok(bytes.includes(Buffer.from(`${Buffer.from('dp_hash').toString('hex')}${'00'.repeat(9)}0000000100000000`, 'hex')), 'the parameter follows the method\'s name');
  t.strictSame(decodeMessage(bytes), { version: 6, xid: 3, msg: mod }, 'group_mod round trip');
  const reply: OfMessage = { kind: 'group_desc_reply', more: false, groups: [group] };
  t.strictSame(decodeMessage(encodeMessage(reply, 4)).msg, reply, 'a group desc reply carries it back');
  const { selectionMethodParam: _p, ...noParam } = group;
  t.strictSame(decodeMessage(encodeMessage({ kind: 'group_mod', mod: { command: 'add', group: noParam } }, 5)).msg,
    { kind: 'group_mod', mod: { command: 'add', group: noParam } }, 'no parameter reads back as none (not 0)');
  t.notSame(encodeMessage(mod, 3), encodeMessage({ kind: 'group_mod', mod: { command: 'add', group: noParam } }, 3), 'the parameter changes the bytes');
  const { selectionMethod: _m, ...noMethod } = group;
  t.throws(() => encodeMessage({ kind: 'group_mod', mod: { command: 'add', group: noMethod } }, 6), /selection_method_param without a selection_method/);
  const probe = spawnSync('ovs-ofctl', ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    t.comment('ovs-ofctl is not installed: nothing to compare with');
    return;
  }
  const printed = spawnSync('ovs-ofctl', ['ofp-print', bytes.toString('hex')], { encoding: 'utf8' });
  t.equal(printed.status, 0, printed.stderr);
  t.match(printed.stdout, 'group_id=7,type=select,selection_method=dp_hash,selection_method_param=4294967296,'
    + 'bucket=bucket_id:0,weight:100,actions=set_field:0x1000000000000/0xffff000000000000->xreg4,resubmit(,22),'
    + 'bucket=bucket_id:1,weight:50,actions=set_field:0x2000000000000/0xffff000000000000->xreg4,resubmit(,22)', 'ovs-ofctl ofp-print reads it as written');
});

t.test('non-canonical spellings decode to their canonical form', async (t) => {
  const cases: [OfAction[], OfAction[]][] = [
    [[{ kind: 'drop' }], []],
    [[{ kind: 'load', dst: { field: 'reg0', start: 0, end: 31 }, value: 5n }], [{ kind: 'set_field', field: 'reg0', value: 5n }]],
    [[{ kind: 'set_field', field: 'reg0', value: 0x50n, mask: 0xf0n }], [{ kind: 'load', dst: { field: 'reg0', start: 4, end: 7 }, value: 5n }]],
    [[{ kind: 'set_field', field: 'reg0', value: 0x5n, mask: 0xffffffffn }], [{ kind: 'set_field', field: 'reg0', value: 5n }]],
    [[{ kind: 'controller', userdata: new Uint8Array(0), maxLen: 65535, reason: 'action', controllerId: 0, meterId: 0xffffffff }],
      [{ kind: 'controller', userdata: Buffer.alloc(0) }]],
    [[{ kind: 'note', data: Buffer.from('ab') }], [{ kind: 'note', data: Buffer.from([0x61, 0x62, 0, 0, 0, 0]) }]],
    [[{ kind: 'controller_op', opcode: 3, nested: [{ kind: 'output', port: 1 }], pause: true }],
      [{ kind: 'controller', pause: true, userdata: Buffer.concat([Buffer.from('0000000300000000', 'hex'), encodeActions([{ kind: 'output', port: 1 }])]) }]],
  ];
  for (const [input, canonical] of cases) t.strictSame(decodeActions(encodeActions(input)), canonical, input[0]?.kind ?? 'empty');
});

t.test('Open vSwitch spellings of matches fold into our names', async (t) => {
  // OXM_OF_PKT_REG0 (class 0x8001) = reg0:reg1; OXM VLAN_VID/VLAN_PCP = vlan_tci.
  const bytes = Buffer.from('0001' + '0024' + '80010110' + '0000000100000000' + '000000ff00000000'
    + '80000d04' + '10001000' + '80000e01' + '05' + '000000000000', 'hex');
  bytes.writeUInt16BE(4 + 20 + 8 + 5, 2);
  const m = readMatch(new Reader(bytes));
  t.strictSame(m, new Map([
    ['reg0', { value: 1n, mask: 0xffn }],
    ['vlan_tci', { value: 0x1000n | (5n << 13n), mask: 0x1000n | (7n << 13n) }],
  ]));
});

t.test('errors read as names', async (t) => {
  const e = (errType: number, code: number, experimenter?: number): string => {
    const msg: OfMessage = experimenter === undefined ? { kind: 'error', errType, code, data: Buffer.alloc(0) } : { kind: 'error', errType, code, experimenter, data: Buffer.alloc(0) };
    const d = decodeMessage(encodeMessage(msg, 9)).msg;
    if (d.kind !== 'error') throw new Error('not an error');
    return describeError(d);
  };
  t.equal(e(2, 15), 'OFPET_BAD_ACTION/BAD_SET_ARGUMENT');
  t.equal(e(4, 9), 'OFPET_BAD_MATCH/BAD_PREREQ');
  t.equal(e(17, 13), 'OFPET_BUNDLE_FAILED/MSG_FAILED');
  t.equal(e(0xffff, 15, 0x2320), 'Nicira error NXBAC_BAD_CONJUNCTION');
  t.equal(e(0xffff, 7, 0x1234), 'experimenter 0x1234 error code 7');
  t.equal(e(99, 1), 'error type 99 code 1');
});
