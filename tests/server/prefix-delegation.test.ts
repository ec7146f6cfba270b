// From apply version 10 a chassis writes options:ipv6_ra_pd_list into a router port's binding
// (the prefix its DHCPv6 prefix delegation obtained), northd keeps it there and advertises it,
// and the central writes the port's NB ipv6_prefix when the port asks for one (options:prefix).
// Before 10 the write is refused, naming the version. (Case (nn) of the differential test
// compares the binding and the NB prefix with the real ovn-northd's.)
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_PREFIX_DELEGATION } from '../../server/apply-version.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import type { ApplyResult } from '../../server/nb-state-machine.js';
import { NbStateMachine, delegatedPrefix } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

function machine(version: number): { sm: NbStateMachine; projection: NorthdProjection; nb(ops: unknown[]): void; sb(ops: unknown[]): ApplyResult } {
  const projection = new NorthdProjection();
  const sm = new NbStateMachine({ schema, projection });
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  sm.apply(entry(encodeCommand({ kind: 'apply-version', version, seed: [7, 7, 7, 7] })), false);
  return {
    sm, projection,
    nb: (ops) => void sm.apply(entry(encodeCommand(nbTxn(ops, [sm.revision + 1, 1, 2, 3], 0, 1000 + sm.revision))), false),
    sb: (ops) => sm.apply(entry(encodeCommand(sbTxn(ops, [sm.revision + 1, 4, 5, 6], 0, 5000))), false) as ApplyResult,
  };
}

const topology: unknown[] = [
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'rp'] } },
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'rp', row: { name: 'sw0-lr0', type: 'router', addresses: 'router', options: ['map', [['router-port', 'lr0-sw0']]] } },
  { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', ports: ['named-uuid', 'lrp'] } },
  {
    op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'lrp', row: {
      name: 'lr0-sw0', mac: '00:00:00:00:ff:01', networks: 'fd00:1::1/64',
      options: ['map', [['prefix', 'true'], ['prefix_delegation', 'true']]], ipv6_ra_configs: ['map', [['address_mode', 'slaac'], ['send_periodic', 'true']]],
    },
  },
];

const setPdList = (value: string): unknown[] => [{ op: 'mutate', table: 'Port_Binding', where: [['logical_port', '==', 'lr0-sw0']], mutations: [['options', 'delete', ['set', ['ipv6_ra_pd_list']]], ['options', 'insert', ['map', [['ipv6_ra_pd_list', value]]]]] }];

function binding(p: NorthdProjection): Row | undefined {
  return [...(p.view().get('Port_Binding')?.values() ?? [])].find((r) => r.logical_port === 'lr0-sw0');
}

const lrpPrefix = (sm: NbStateMachine): unknown => [...sm.nb.rows('Logical_Router_Port').values()][0]?.ipv6_prefix;

t.test('delegatedPrefix reads "aid:prefix" as ovn-northd scans it', async (t) => {
  t.same(['1:2001:db8::/48', ' 2: fd00::/56 rest', '1-2001:db8::/48', 'x:fd00::/56', '1:', undefined].map(delegatedPrefix), ['2001:db8::/48', 'fd00::/56', undefined, undefined, undefined, undefined]);
});

t.test('version 10: the chassis writes the prefix, northd advertises it, the NB port gets ipv6_prefix', async (t) => {
  const m = machine(APPLY_VERSION_PREFIX_DELEGATION);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb(topology);
  t.match(m.sb(setPdList('1:2001:db8:1::/48')), { kind: 'committed' });
  const options = binding(m.projection)?.options as ReadonlyMap<string, string>;
  t.equal(options.get('ipv6_ra_pd_list'), '1:2001:db8:1::/48', 'kept in the binding');
  t.equal(options.get('ipv6_ra_prefixes'), 'fd00:1::/64 1:2001:db8:1::/48', 'advertised after the port\'s own prefix');
  t.same(lrpPrefix(m.sm), ['2001:db8:1::/48'], 'NB ipv6_prefix written in the same entry');
  // Another key of northd's options is still refused, and changes nothing.
  const refused = m.sb([{ op: 'mutate', table: 'Port_Binding', where: [['logical_port', '==', 'lr0-sw0']], mutations: [['options', 'insert', ['map', [['ipv6_ra_mtu', '1400']]]]] }]);
  t.match(refused, { kind: 'failed' });
  t.match(JSON.stringify(refused), /may set only options:additional-chassis-activated and options:ipv6_ra_pd_list \(not ipv6_ra_mtu\)/);
  // The port no longer asks for a prefix: a new one is kept in the binding, not written to the NB.
  m.nb([{ op: 'mutate', table: 'Logical_Router_Port', where: [], mutations: [['options', 'delete', ['set', ['prefix']]]] }]);
  t.match(m.sb(setPdList('1:2001:db8:2::/48')), { kind: 'committed' });
  t.same(lrpPrefix(m.sm), ['2001:db8:1::/48'], 'the NB keeps what it had (ovn-northd never clears it)');
  t.equal((binding(m.projection)?.options as ReadonlyMap<string, string>).get('ipv6_ra_pd_list'), '1:2001:db8:2::/48');
});

t.test('before version 10 the write is refused, naming the version, and changes nothing', async (t) => {
  const m = machine(APPLY_VERSION_PREFIX_DELEGATION - 1);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb(topology);
  const out = m.sb(setPdList('1:2001:db8:1::/48'));
  t.match(out, { kind: 'failed' });
  t.match(JSON.stringify(out), /apply version 10/);
  t.equal((binding(m.projection)?.options as ReadonlyMap<string, string>).get('ipv6_ra_pd_list'), undefined);
  t.same(lrpPrefix(m.sm), []);
});
