// The central writes dynamic_addresses inside the entry that calls for them: the revision that
// adds a "dynamic" port holds its addresses, watchers see them in that revision's delta, the SB
// view's Port_Binding.mac is built from them, and a replica restored from a snapshot goes on
// allocating exactly as one that never stopped. Without a projection (no northd), nothing is
// written.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { encodeCommand, nbTxn } from '../../server/commands.js';
import type { CommitEvent } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

const addPort = (sw: string, name: string, addresses: string[]): unknown[] => [
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name, addresses: ['set', addresses] } },
  { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', sw]], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] },
];

interface Machine {
  readonly sm: NbStateMachine;
  readonly projection: NorthdProjection | undefined;
  nb(ops: unknown[]): void;
  group(txns: unknown[][]): void;
  dyn(name: string): string;
}

function machine(withProjection: boolean): Machine {
  const projection = withProjection ? new NorthdProjection() : undefined;
  const sm = new NbStateMachine({ schema, ...(projection !== undefined ? { projection } : {}) });
  // Entries follow the state machine's revision (a restored one goes on from its snapshot's),
  // and their seeds follow the index: two machines handed the same ops agree.
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  // As a cluster's leader does first: northd's NB writes come with apply version 2.
  sm.apply(entry(encodeCommand({ kind: 'apply-version', version: APPLY_VERSION_MAX, seed: [9, 9, 9, 9] })), false);
  return {
    sm,
    projection,
    nb: (ops) => void sm.apply(entry(encodeCommand(nbTxn(ops, [sm.revision + 1, 1, 2, 3], 0, 1000 + sm.revision))), false),
    group: (txns) => void sm.apply(entry(encodeCommand({ kind: 'nb-group', txns: txns.map((ops, i) => nbTxn(ops, [sm.revision + 1, i, 2, 3], 0, 1000 + sm.revision)) })), false),
    dyn: (name) => {
      const row = [...sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === name);
      return ((row?.dynamic_addresses as string[] | undefined) ?? [])[0] ?? '';
    },
  };
}

const setup = [
  { op: 'insert', table: 'NB_Global', row: { options: ['map', [['mac_prefix', '0a:00:00']]] } },
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', other_config: ['map', [['subnet', '10.0.0.0/24']]] } },
];

t.test('the revision that adds a dynamic port holds its addresses, and the SB view uses them', async (t) => {
  const m = machine(true);
  const events: CommitEvent[] = [];
  m.sm.onCommit((e) => events.push(e));
  m.nb(setup);
  m.nb(addPort('sw0', 'vm1', ['dynamic']));
  t.equal(m.dyn('vm1'), '0a:00:00:00:00:03 10.0.0.2');
  const last = events[events.length - 1] as CommitEvent;
  const change = last.delta.changes.find((c) => c.table === 'Logical_Switch_Port');
  t.equal(change?.kind, 'insert', 'one insert of the port in that revision');
  t.same(change?.kind === 'insert' ? change.new.dynamic_addresses : undefined, ['0a:00:00:00:00:03 10.0.0.2'], 'with its dynamic_addresses');
  // ovn-northd copies addresses as written into Port_Binding.mac ("dynamic"); the flows use
  // the address it chose.
  const flows = [...(m.projection?.view().get('Logical_Flow')?.values() ?? [])].filter((r: Row) => r.match === 'eth.dst == 0a:00:00:00:00:03');
  t.ok(flows.some((r) => (r.actions as string).includes('outport = "vm1"')), 'the switch delivers the dynamic MAC to the port');

  // Two transactions of one group: each port gets its own address.
  m.group([addPort('sw0', 'vm2', ['dynamic']), addPort('sw0', 'vm3', ['dynamic'])]);
  t.same([m.dyn('vm2'), m.dyn('vm3')].sort(), ['0a:00:00:00:00:04 10.0.0.3', '0a:00:00:00:00:05 10.0.0.4']);
});

t.test('a replica restored from a snapshot allocates as one that never stopped', async (t) => {
  const a = machine(true);
  a.nb(setup);
  for (let i = 0; i < 5; i++) a.nb(addPort('sw0', `vm${i}`, ['dynamic']));
  const b = machine(true);
  b.sm.restore(a.sm.snapshot());
  const steps: unknown[][] = [
    [{ op: 'delete', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']] }, { op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', ['set', [['uuid', [...a.sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === 'vm1')?._uuid as string]]]]] }],
    addPort('sw0', 'vm9', ['dynamic']),
    addPort('sw0', 'vm10', ['0a:00:00:00:00:0c dynamic']),
    [{ op: 'update', table: 'NB_Global', where: [], row: { options: ['map', [['mac_prefix', '0a:00:01']]] } }],
  ];
  for (const ops of steps) {
    a.nb(ops);
    b.nb(ops);
  }
  const all = (m: Machine): string[] => [...m.sm.nb.rows('Logical_Switch_Port').values()].map((r) => `${r.name as string}=${((r.dynamic_addresses as string[])[0] ?? '')}`).sort();
  t.same(all(b), all(a));
  t.equal(a.dyn('vm9'), '0a:00:01:00:00:04 10.0.0.3', "vm1's address is given again; every MAC moved to the new prefix");
});

t.test('without a projection, nothing writes dynamic_addresses', async (t) => {
  const m = machine(false);
  m.nb(setup);
  m.nb(addPort('sw0', 'vm1', ['dynamic']));
  t.equal(m.dyn('vm1'), '');
});
