// The port mirror planner (agent/local/mirrors.ts) against ovn-controller 23.03's mirror.c:
// which VIFs count, the OVS Mirror/Port/Interface it makes and how it changes them as the SB row
// and the bindings change, and what it leaves alone. Method: SB and OVS rows built by hand, the
// planner's operations compared field by field; the groups' operations are also applied to the
// hand-built rows (a small interpreter of the few operations the planner writes) to check that a
// second run after them has nothing left to do.
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { LocalIface } from '../../agent/local/binding.js';
import type { OpJson } from '../../agent/local/ovsdb-json.js';
import type { OvsBridge, OvsTables } from '../../agent/local/ovs-rows.js';
import { checkSbMirror, mirrorOps, mirroredVifs, mirrorPortName } from '../../agent/local/mirrors.js';

type Table = 'Open_vSwitch' | 'Datapath' | 'Bridge' | 'Port' | 'Interface' | 'Mirror' | 'SSL' | 'Flow_Sample_Collector_Set';

/** A hand-built Open_vSwitch replica with br-int, and the few operations the planner writes. */
class FakeOvs {
  readonly t = new Map<Table, Map<string, Row>>((['Open_vSwitch', 'Datapath', 'Bridge', 'Port', 'Interface', 'Mirror', 'SSL', 'Flow_Sample_Collector_Set'] as const).map((n) => [n, new Map()]));
  private next = 0;
  constructor() {
    this.put('Bridge', 'br', { name: 'br-int', ports: [], mirrors: [], datapath_type: 'netdev', fail_mode: ['secure'], other_config: new Map(), external_ids: new Map() });
  }
  get tables(): OvsTables {
    return (name) => this.t.get(name) as Map<string, Row>;
  }
  get br(): OvsBridge {
    return this.t.get('Bridge')?.get('br') as unknown as OvsBridge;
  }
  put(table: Table, uuid: string, row: Record<string, unknown>): void {
    (this.t.get(table) as Map<string, Row>).set(uuid, { _uuid: uuid, _version: '', ...row } as Row);
  }
  /** A port on br-int with one interface. */
  addPort(uuid: string, name: string, type: string, opts: { options?: Record<string, string>; portIds?: Record<string, string>; ifaceIds?: Record<string, string>; bridge?: boolean } = {}): void {
    this.put('Interface', `i-${uuid}`, { name, type, options: new Map(Object.entries(opts.options ?? {})), external_ids: new Map(Object.entries(opts.ifaceIds ?? {})), ofport: [1], mtu: [], bfd: new Map(), bfd_status: new Map() });
    this.put('Port', uuid, { name, interfaces: [`i-${uuid}`], external_ids: new Map(Object.entries(opts.portIds ?? {})) });
    if (opts.bridge !== false) this.mutateSet('Bridge', 'br', 'ports', [uuid], []);
  }
  addMirror(uuid: string, name: string, cols: { src?: string[]; dst?: string[]; out?: string[]; owned?: string | undefined } = {}): void {
    const ids = cols.owned === undefined ? new Map<string, string>() : new Map([['ovn-owned', cols.owned]]);
    this.put('Mirror', uuid, { name, select_src_port: cols.src ?? [], select_dst_port: cols.dst ?? [], output_port: cols.out ?? [], external_ids: ids });
    this.mutateSet('Bridge', 'br', 'mirrors', [uuid], []);
  }
  private mutateSet(table: Table, uuid: string, col: string, add: string[], del: string[]): void {
    const row = (this.t.get(table) as Map<string, Row>).get(uuid) as Record<string, unknown>;
    const now = (row[col] as string[]).filter((x) => !del.includes(x));
    for (const a of add) if (!now.includes(a)) now.push(a);
    row[col] = now.sort();
  }
  /** Applies the planner's operations (insert, update, mutate of sets) with RFC 7047 values. */
  apply(ops: readonly OpJson[]): void {
    const named = new Map<string, string>();
    const value = (v: unknown): unknown => {
      if (!Array.isArray(v)) return v;
      if (v[0] === 'uuid') return v[1];
      if (v[0] === 'named-uuid') return named.get(v[1] as string);
      if (v[0] === 'set') return (v[1] as unknown[]).map(value);
      if (v[0] === 'map') return new Map(v[1] as [string, string][]);
      throw new Error(`value ${JSON.stringify(v)}`);
    };
    // A single reference stays a set in the replica (output_port), as the client decodes it.
    const column = (col: string, v: unknown): unknown => {
      const x = value(v);
      return typeof x === 'string' && ['output_port', 'interfaces'].includes(col) ? [x] : x;
    };
    for (const op of ops) {
      const table = op.table as Table;
      if (op.op === 'insert') {
        const uuid = `new${this.next++}`;
        named.set(op['uuid-name'] as string, uuid);
        const row: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(op.row as object)) row[k] = column(k, v);
        if (table === 'Interface') Object.assign(row, { external_ids: row.external_ids ?? new Map(), ofport: [], mtu: [], bfd: new Map(), bfd_status: new Map() });
        if (table === 'Mirror') Object.assign(row, { select_src_port: row.select_src_port ?? [], select_dst_port: row.select_dst_port ?? [] });
        this.put(table, uuid, row);
        continue;
      }
      const where = op.where as [string, string, [string, string]][];
      const uuid = where[0]?.[2][1] as string;
      const row = this.t.get(table)?.get(uuid) as Record<string, unknown> | undefined;
      if (row === undefined) throw new Error(`${String(op.op)} of a missing ${table} ${uuid}`);
      if (op.op === 'update') {
        for (const [k, v] of Object.entries(op.row as object)) row[k] = column(k, v);
      } else if (op.op === 'mutate') {
        for (const [col, how, v] of op.mutations as [string, string, unknown][]) {
          const items = value(v) as string[];
          this.mutateSet(table, uuid, col, how === 'insert' ? items : [], how === 'delete' ? items : []);
        }
      } else throw new Error(`op ${String(op.op)}`);
    }
    // Garbage collection of what no bridge holds, and weak references to rows gone.
    const br = this.br;
    for (const u of [...(this.t.get('Port') as Map<string, Row>).keys()]) if (!br.ports.includes(u)) this.t.get('Port')?.delete(u);
    for (const u of [...(this.t.get('Mirror') as Map<string, Row>).keys()]) if (!br.mirrors.includes(u)) this.t.get('Mirror')?.delete(u);
    for (const m of (this.t.get('Mirror') as Map<string, Row>).values()) {
      const r = m as Record<string, unknown>;
      for (const c of ['select_src_port', 'select_dst_port', 'output_port']) r[c] = (r[c] as string[]).filter((u) => this.t.get('Port')?.has(u));
    }
  }
  mirrors(): Record<string, unknown>[] {
    return [...(this.t.get('Mirror') as Map<string, Row>).values()] as Record<string, unknown>[];
  }
  port(name: string): Record<string, unknown> | undefined {
    return [...(this.t.get('Port') as Map<string, Row>).values()].find((p) => p.name === name) as Record<string, unknown> | undefined;
  }
  ifaceOf(portName: string): Record<string, unknown> | undefined {
    const p = this.port(portName);
    return p === undefined ? undefined : (this.t.get('Interface')?.get((p.interfaces as string[])[0] as string) as Record<string, unknown> | undefined);
  }
}

const sbMirror = (uuid: string, name: string, over: Partial<Record<keyof sb.Mirror, unknown>> = {}): sb.Mirror =>
  ({ _uuid: uuid, _version: '', name, filter: 'from-lport', sink: '192.0.2.9', type: 'gre', index: 7, external_ids: new Map(), ...over }) as sb.Mirror;
const US = 'chassis-us';
const pbRow = (name: string, rules: string[], over: Partial<Record<keyof sb.Port_Binding, unknown>> = {}): sb.Port_Binding =>
  ({ _uuid: `pb-${name}`, _version: '', logical_port: name, type: '', parent_port: [], chassis: [US], additional_chassis: [], mirror_rules: rules, options: new Map(), ...over }) as unknown as sb.Port_Binding;

/** br-int with VIF ports vm1 (OVS port P1) and vm2 (P2). */
function world(): FakeOvs {
  const ovs = new FakeOvs();
  ovs.addPort('P1', 'tap1', '', { ifaceIds: { 'iface-id': 'vm1' } });
  ovs.addPort('P2', 'tap2', '', { ifaceIds: { 'iface-id': 'vm2' } });
  return ovs;
}
const vifs = (...pbs: sb.Port_Binding[]): { pb: sb.Port_Binding; ovsPort: string }[] => pbs.map((pb) => ({ pb, ovsPort: pb.logical_port === 'vm1' ? 'P1' : 'P2' }));
const opsOf = (groups: { ops: readonly OpJson[] }[]): OpJson[] => groups.flatMap((g) => g.ops);
/** Runs the planner and applies what it returns; returns the plan. */
function step(ovs: FakeOvs, mirrors: sb.Mirror[], v: { pb: sb.Port_Binding; ovsPort: string }[]): ReturnType<typeof mirrorOps> {
  const plan = mirrorOps(ovs.tables, ovs.br, mirrors, v);
  ovs.apply(opsOf(plan.groups));
  return plan;
}
const opts = (m: unknown): Record<string, string> => Object.fromEntries(m as Map<string, string>);

t.test('checkSbMirror: type, options, IPv6 sink, malformed rows', async (t) => {
  t.same(checkSbMirror(sbMirror('u', 'm')), { kind: 'ok', spec: { name: 'm', filter: 'from-lport', type: 'gre', options: new Map([['remote_ip', '192.0.2.9'], ['key', '7']]) } });
  const erspan = checkSbMirror(sbMirror('u', 'm', { type: 'erspan', index: 12, filter: 'to-lport' }));
  t.same(erspan.kind === 'ok' ? opts(erspan.spec.options) : undefined, { remote_ip: '192.0.2.9', key: '12', erspan_idx: '12', erspan_ver: '1' }, 'erspan: erspan_idx = key = index, erspan_ver 1');
  t.equal(erspan.kind === 'ok' ? erspan.spec.filter : undefined, 'to-lport');
  const v6 = checkSbMirror(sbMirror('u', 'm', { sink: '2001:db8::9' }));
  t.equal(v6.kind === 'ok' ? v6.spec.type : undefined, 'ip6gre', 'an IPv6 sink makes ip6gre');
  const v6e = checkSbMirror(sbMirror('u', 'm', { sink: '2001:db8::9', type: 'erspan' }));
  t.equal(v6e.kind === 'ok' ? v6e.spec.type : undefined, 'ip6erspan');
  t.match(checkSbMirror(sbMirror('u', 'm', { sink: 'sink.example' })), { kind: 'bad', reason: /sink "sink.example"/ });
  t.match(checkSbMirror(sbMirror('u', 'm', { sink: '10.0.0.256' })), { kind: 'bad', reason: /sink/ });
  t.match(checkSbMirror(sbMirror('u', 'm', { type: 'vxlan' })), { kind: 'bad', reason: /type "vxlan"/ });
  t.match(checkSbMirror(sbMirror('u', 'm', { filter: 'both' })), { kind: 'bad', reason: /filter "both"/ });
  t.match(checkSbMirror(sbMirror('u', 'm', { index: -1 })), { kind: 'bad', reason: /index -1/ });
  t.match(checkSbMirror(sbMirror('u', 'm', { index: 2 ** 32 })), { kind: 'bad', reason: /index/ });
  t.equal(checkSbMirror(sbMirror('u', 'm', { index: 2 ** 32 - 1 })).kind, 'ok', 'the largest 32-bit key');
  t.equal(mirrorPortName('span1'), 'ovn-span1', "ovn-controller's output port name");
});

t.test('create: the Mirror, its output port and the bridge references, in one group', async (t) => {
  const ovs = world();
  const m1 = sbMirror('M1', 'm1');
  const plan = mirrorOps(ovs.tables, ovs.br, [m1], vifs(pbRow('vm1', ['M1'])));
  t.same(plan.problems, []);
  t.equal(plan.groups.length, 1, 'one group');
  const ops = opsOf(plan.groups);
  t.same(ops.map((o) => `${String(o.op)} ${String(o.table)}`), ['insert Interface', 'insert Port', 'mutate Bridge', 'insert Mirror', 'mutate Bridge']);
  t.match(ops[0], { row: { name: 'ovn-m1', type: 'gre', options: ['map', [['key', '7'], ['remote_ip', '192.0.2.9']]] } });
  t.match(ops[1], { row: { name: 'ovn-m1' } });
  const mirror = ops[3] as { row: Record<string, unknown>; 'uuid-name': string };
  t.same(mirror.row, {
    name: 'm1',
    output_port: ['named-uuid', (ops[1] as { 'uuid-name': string })['uuid-name']],
    select_src_port: ['set', [['uuid', 'P1']]],
    select_dst_port: ['set', []],
    external_ids: ['map', [['ovn-owned', 'true']]],
  });
  t.same((ops[4] as { mutations: unknown }).mutations, [['mirrors', 'insert', ['set', [['named-uuid', mirror['uuid-name']]]]]]);
  ovs.apply(ops);
  t.same(mirrorOps(ovs.tables, ovs.br, [m1], vifs(pbRow('vm1', ['M1']))).groups, [], 'nothing left to do once applied (idempotent)');
});

t.test('which VIFs count: bound here (main or additional), plain VIFs only', async (t) => {
  const ovs = world();
  const ifaces = new Map<string, LocalIface>([
    ['vm1', { ifaceUuid: 'i-P1', name: 'tap1', ofport: 1, ovnInstalled: true }],
    ['vm2', { ifaceUuid: 'i-P2', name: 'tap2', ofport: 2, ovnInstalled: true }],
  ]);
  const pbs = new Map<string, sb.Port_Binding>();
  const look = (n: string): sb.Port_Binding | undefined => pbs.get(n);
  pbs.set('vm1', pbRow('vm1', ['M1']));
  pbs.set('vm2', pbRow('vm2', ['M1'], { chassis: ['other'] }));
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US).map((v) => [v.pb.logical_port, v.ovsPort]), [['vm1', 'P1']], 'a port bound elsewhere does not count');
  pbs.set('vm2', pbRow('vm2', ['M1'], { chassis: ['other'], additional_chassis: [US] }));
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US).map((v) => v.ovsPort), ['P1', 'P2'], 'an additional chassis counts (a migration destination)');
  pbs.set('vm2', pbRow('vm2', ['M1'], { type: 'virtual' }));
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US).map((v) => v.ovsPort), ['P1'], 'a typed port is not a primary VIF binding');
  pbs.set('vm2', pbRow('vm2', ['M1'], { parent_port: ['vm1'] }));
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US).map((v) => v.ovsPort), ['P1'], 'a container port is not either');
  pbs.delete('vm2');
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US).map((v) => v.ovsPort), ['P1'], 'an interface without a binding');
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, undefined), [], 'nothing before this chassis is registered');
  pbs.set('vm1', pbRow('vm1', ['M1'], { chassis: [] }));
  t.same(mirroredVifs(ovs.tables, ovs.br, ifaces, look, US), [], 'an unbound port');
  t.same(mirrorOps(ovs.tables, ovs.br, [sbMirror('M1', 'm1')], []).groups, [], 'a mirror no local port names is not made');
});

t.test('a port moved between filters, and both directions at once', async (t) => {
  const ovs = world();
  step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  const plan = step(ovs, [sbMirror('M1', 'm1', { filter: 'to-lport' })], vifs(pbRow('vm1', ['M1'])));
  t.equal(plan.groups.length, 1);
  t.same(opsOf(plan.groups).map((o) => `${String(o.op)} ${String(o.table)}`), ['update Mirror'], 'only the Mirror row changes');
  t.same(ovs.mirrors().map((m) => [m.select_src_port, m.select_dst_port]), [[[], ['P1']]], 'vm1 now selected as a destination');
  // Two mirrors, one each way, on two ports.
  const both = step(ovs, [sbMirror('M1', 'm1', { filter: 'to-lport' }), sbMirror('M2', 'm2', { sink: '192.0.2.10' })], vifs(pbRow('vm1', ['M1', 'M2']), pbRow('vm2', ['M1'])));
  t.same(both.groups.map((g) => g.what.split(':')[0]), ['update mirror m1 on br-int', 'create mirror m2 on br-int']);
  const byName = new Map(ovs.mirrors().map((m) => [m.name, m]));
  t.same(byName.get('m1')?.select_dst_port, ['P1', 'P2']);
  t.same(byName.get('m2')?.select_src_port, ['P1']);
  t.same(step(ovs, [sbMirror('M1', 'm1', { filter: 'to-lport' }), sbMirror('M2', 'm2', { sink: '192.0.2.10' })], vifs(pbRow('vm1', ['M1', 'M2']), pbRow('vm2', ['M1']))).groups, [], 'settled');
});

t.test('sink, type and index changes update the output interface in place', async (t) => {
  const ovs = world();
  const bound = vifs(pbRow('vm1', ['M1']));
  step(ovs, [sbMirror('M1', 'm1')], bound);
  const portUuid = ovs.port('ovn-m1')?._uuid;
  const plan = step(ovs, [sbMirror('M1', 'm1', { sink: '192.0.2.77', index: 9 })], bound);
  t.same(opsOf(plan.groups).map((o) => `${String(o.op)} ${String(o.table)}`), ['update Interface']);
  t.same(opts(ovs.ifaceOf('ovn-m1')?.options), { remote_ip: '192.0.2.77', key: '9' });
  step(ovs, [sbMirror('M1', 'm1', { sink: '192.0.2.77', index: 9, type: 'erspan' })], bound);
  t.equal(ovs.ifaceOf('ovn-m1')?.type, 'erspan');
  t.same(opts(ovs.ifaceOf('ovn-m1')?.options), { remote_ip: '192.0.2.77', key: '9', erspan_idx: '9', erspan_ver: '1' });
  step(ovs, [sbMirror('M1', 'm1', { sink: 'fd00::77', index: 9, type: 'erspan' })], bound);
  t.equal(ovs.ifaceOf('ovn-m1')?.type, 'ip6erspan', 'an IPv6 sink');
  step(ovs, [sbMirror('M1', 'm1', { sink: 'fd00::77', index: 9 })], bound);
  t.equal(ovs.ifaceOf('ovn-m1')?.type, 'ip6gre');
  t.same(opts(ovs.ifaceOf('ovn-m1')?.options), { remote_ip: 'fd00::77', key: '9' }, 'the erspan options go with the type');
  t.equal(ovs.port('ovn-m1')?._uuid, portUuid, 'the same port throughout');
  t.equal(ovs.mirrors().length, 1);
  t.same(step(ovs, [sbMirror('M1', 'm1', { sink: 'fd00::77', index: 9 })], bound).groups, []);
});

t.test('detach and SB row deleted: the Mirror and its port go', async (t) => {
  const ovs = world();
  step(ovs, [sbMirror('M1', 'm1'), sbMirror('M2', 'm2')], vifs(pbRow('vm1', ['M1']), pbRow('vm2', ['M2'])));
  t.equal(ovs.mirrors().length, 2);
  let plan = step(ovs, [sbMirror('M1', 'm1'), sbMirror('M2', 'm2')], vifs(pbRow('vm1', []), pbRow('vm2', ['M2'])));
  t.same(plan.groups.map((g) => g.what), ['remove mirror m1 from br-int (no port bound here uses it)']);
  t.same(opsOf(plan.groups).map((o) => (o.mutations as unknown[][])[0]?.[0]), ['mirrors', 'ports'], 'out of Bridge.mirrors and its port out of Bridge.ports');
  t.same(ovs.mirrors().map((m) => m.name), ['m2']);
  t.equal(ovs.port('ovn-m1'), undefined, 'the output port is gone');
  plan = step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', []), pbRow('vm2', ['M2'])));
  t.same(plan.groups.map((g) => g.what), ['remove mirror m2 from br-int (its SB row is gone)']);
  t.same(ovs.mirrors(), []);
  t.equal(ovs.port('ovn-m2'), undefined);
  t.ok(ovs.port('tap1') !== undefined && ovs.port('tap2') !== undefined, 'the VIF ports stay');
});

t.test('mirrors without ovn-owned are never touched', async (t) => {
  const ovs = world();
  ovs.addPort('PX', 'span-out', 'gre', { options: { remote_ip: '192.0.2.1' } });
  ovs.addMirror('MX', 'm1', { src: ['P1'], out: ['PX'] });
  ovs.addMirror('MY', 'm9', { src: ['P2'], out: ['PX'], owned: 'false' });
  t.same(mirrorOps(ovs.tables, ovs.br, [], []).groups, [], 'not removed with no SB mirror');
  const plan = step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  t.same(plan.groups.map((g) => g.what.split(':')[0]), ['create mirror m1 on br-int'], 'ours is made beside the foreign one of the same name');
  t.notOk(JSON.stringify(opsOf(plan.groups)).includes('"MX"'), 'no operation names the foreign mirror');
  t.same(ovs.mirrors().filter((m) => m._uuid === 'MX' || m._uuid === 'MY').map((m) => [m.name, m.select_src_port, m.output_port]), [['m1', ['P1'], ['PX']], ['m9', ['P2'], ['PX']]]);
  step(ovs, [], []);
  t.same(ovs.mirrors().map((m) => m._uuid).sort(), ['MX', 'MY'], 'removing ours leaves them');
  t.ok(ovs.port('span-out'));
  // ovn-owned is read as Open vSwitch reads a boolean: case-blind.
  ovs.addPort('PZ', 'ovn-mz', 'gre', { options: { remote_ip: '192.0.2.1', key: '1' } });
  ovs.addMirror('MZ', 'mz', { src: ['P1'], out: ['PZ'], owned: 'TRUE' });
  t.same(step(ovs, [], []).groups.map((g) => g.what), ['remove mirror mz from br-int (its SB row is gone)']);
});

t.test('malformed SB rows are skipped with a reason, and what was made of them goes', async (t) => {
  const ovs = world();
  step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  const plan = step(ovs, [sbMirror('M1', 'm1', { sink: 'not-an-ip' }), sbMirror('M2', 'm2', { type: 'vxlan' })], vifs(pbRow('vm1', ['M1', 'M2'])));
  t.same(plan.problems, ['SB mirror m1 skipped: sink "not-an-ip" is not an IPv4 or IPv6 address', 'SB mirror m2 skipped: type "vxlan" is neither gre nor erspan']);
  t.same(plan.groups.map((g) => g.what), ['remove mirror m1 from br-int (its SB row is gone)'], 'a row that became malformed takes its mirror with it');
  t.same(ovs.mirrors(), []);
  const dup = mirrorOps(ovs.tables, ovs.br, [sbMirror('M1', 'm1'), sbMirror('M0', 'm1', { sink: '192.0.2.3' })], vifs(pbRow('vm1', ['M0', 'M1'])));
  t.same(dup.problems, ['SB mirror m1 skipped: another SB mirror has that name'], 'two rows of one name: the first by uuid is used');
  t.match(opsOf(dup.groups)[0], { row: { options: ['map', [['key', '7'], ['remote_ip', '192.0.2.3']]] } });
  t.same(mirrorOps(ovs.tables, ovs.br, [], vifs(pbRow('vm1', ['GONE']))).groups, [], 'a mirror_rules uuid with no SB row is ignored');
});

t.test('bounded: at most mirrorsMax mirrors, the first by name', async (t) => {
  const ovs = world();
  const ms = ['c', 'a', 'b'].map((n, i) => sbMirror(`M${n}`, n, { index: i }));
  const plan = step(ovs, ms, vifs(pbRow('vm1', ['Ma', 'Mb', 'Mc'])));
  // The default limit is Open vSwitch's 32; a small one shows the rule.
  t.equal(plan.groups.length, 3, 'three under the default limit');
  const ovs2 = world();
  const small = mirrorOps(ovs2.tables, ovs2.br, ms, vifs(pbRow('vm1', ['Ma', 'Mb', 'Mc'])), { mirrorsMax: 2 });
  t.same(small.groups.map((g) => g.what.split(':')[0]), ['create mirror a on br-int', 'create mirror b on br-int']);
  t.same(small.problems, ['mirror c not made: at most 2 mirrors are kept on br-int']);
  t.same(mirrorOps(ovs.tables, ovs.br, ms, vifs(pbRow('vm1', ['Ma', 'Mb', 'Mc'])), { mirrorsMax: 2 }).groups.map((g) => g.what), ['remove mirror c from br-int (no port bound here uses it)'], 'one beyond the limit that exists is removed');
});

t.test('the output port name: a conflict is skipped, a lone mirror port is taken over', async (t) => {
  const ovs = world();
  ovs.addPort('PT', 'ovn-hv2-0', 'geneve', { options: { remote_ip: '10.0.0.2', key: 'flow' }, portIds: { 'ovn-chassis-id': 'hv2@10.0.0.2' } });
  const conflict = mirrorOps(ovs.tables, ovs.br, [sbMirror('M1', 'hv2-0')], vifs(pbRow('vm1', ['M1'])));
  t.same(conflict.groups, [], 'a tunnel port of that name is not taken');
  t.same(conflict.problems, ['mirror hv2-0 not made: port ovn-hv2-0 exists and is not a free mirror port on br-int']);
  ovs.addPort('PG', 'ovn-x', 'gre', { options: { remote_ip: '10.0.0.2', key: '1' }, bridge: false });
  t.match(mirrorOps(ovs.tables, ovs.br, [sbMirror('M1', 'x')], vifs(pbRow('vm1', ['M1']))).problems, [/port ovn-x exists/], 'one of that name off br-int (Port.name is unique in the database)');
  // A lone gre port of the name, left when its mirror was deleted by hand.
  ovs.addPort('PL', 'ovn-m1', 'gre', { options: { remote_ip: '192.0.2.200', key: '1' } });
  const plan = step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  t.same(opsOf(plan.groups).map((o) => `${String(o.op)} ${String(o.table)}`), ['update Interface', 'insert Mirror', 'mutate Bridge'], 'no second port');
  t.same(ovs.mirrors().map((m) => m.output_port), [['PL']]);
  t.same(opts(ovs.ifaceOf('ovn-m1')?.options), { remote_ip: '192.0.2.9', key: '7' });
  // An OVN mirror whose output port vanished (the weak reference emptied) gets a new one.
  ovs.t.get('Bridge')?.set('br', { ...ovs.br, ports: ovs.br.ports.filter((p) => p !== 'PL') } as unknown as Row);
  ovs.apply([]);
  const again = step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  t.same(opsOf(again.groups).map((o) => `${String(o.op)} ${String(o.table)}`), ['insert Interface', 'insert Port', 'mutate Bridge', 'update Mirror']);
  t.equal(ovs.mirrors()[0]?.output_port && (ovs.mirrors()[0]?.output_port as string[])[0], ovs.port('ovn-m1')?._uuid, 'the mirror outputs to the new port');
});

t.test('a second OVN mirror of one name is removed', async (t) => {
  const ovs = world();
  step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  ovs.addPort('PD', 'ovn-dup', 'gre', { options: { remote_ip: '192.0.2.9', key: '7' } });
  ovs.addMirror('zz', 'm1', { src: ['P1'], out: ['PD'], owned: 'true' });
  const plan = step(ovs, [sbMirror('M1', 'm1')], vifs(pbRow('vm1', ['M1'])));
  t.same(plan.groups.map((g) => g.what), ['remove duplicate mirror m1 from br-int']);
  t.same(ovs.mirrors().map((m) => m._uuid), ['new2'], 'the first by uuid stays');
  t.equal(ovs.port('ovn-dup'), undefined);
});
