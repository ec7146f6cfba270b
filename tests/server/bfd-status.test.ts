// BFD statuses through the replicated state machine (apply version 5): ovn-northd's NB writes
// (a session a route starts using goes down, one no route uses admin_down, a client's change
// between down/init/up undone), a chassis's SB BFD.status report copied into the NB row, the
// static route watched by the session following it, and what an older version refuses.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_BFD } from '../../server/apply-version.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import type { ApplyResult, CommitEvent } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

function machine(version: number): {
  sm: NbStateMachine; projection: NorthdProjection; nb(ops: unknown[]): ApplyResult; sb(ops: unknown[]): ApplyResult; move(v: number): void;
  nbStatus(dst: string): string | undefined; sbRow(dst: string): sb.BFD | undefined; routeFlows(): string[];
} {
  const projection = new NorthdProjection();
  const sm = new NbStateMachine({ schema, projection });
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  const seed = (): [number, number, number, number] => [sm.revision + 1, 1, 2, 3];
  const m = {
    sm,
    projection,
    nb: (ops: unknown[]) => sm.apply(entry(encodeCommand(nbTxn(ops, seed(), 0, 1000))), false),
    sb: (ops: unknown[]) => sm.apply(entry(encodeCommand(sbTxn(ops, seed(), 0, 1000))), false),
    move: (v: number) => void sm.apply(entry(encodeCommand({ kind: 'apply-version', version: v, seed: seed() })), false),
    nbStatus: (dst: string) => ([...sm.nb.rows('BFD').values()].find((r) => r.dst_ip === dst)?.status as string[] | undefined)?.[0],
    sbRow: (dst: string) => [...(projection.view().get('BFD')?.values() ?? [])].find((r) => r.dst_ip === dst) as unknown as sb.BFD | undefined,
    routeFlows: () => [...(projection.view().get('Logical_Flow')?.values() ?? [])]
      .filter((f) => (f.external_ids as ReadonlyMap<string, string>).get('stage-name') === 'lr_in_ip_routing' && (f.match as string).includes('10.9.0.0/16'))
      .map((f) => f.match as string).sort(),
  };
  if (version > 1) m.move(version);
  return m;
}

/** A router with one port on 172.16.0.0/24, a session to 172.16.0.2 and a route to 10.9.0.0/16 watched by it. */
function topology(m: ReturnType<typeof machine>, withRoute = true): void {
  m.nb([
    { op: 'insert', table: 'NB_Global', row: {} },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p', row: { name: 'lr0-ext', mac: '00:00:00:00:ff:01', networks: ['set', ['172.16.0.1/24']] } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', ports: ['set', [['named-uuid', 'p']]] } },
  ]);
  m.nb([
    { op: 'insert', table: 'BFD', 'uuid-name': 'b', row: { logical_port: 'lr0-ext', dst_ip: '172.16.0.2' } },
    ...(withRoute ? [
      { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row: { ip_prefix: '10.9.0.0/16', nexthop: '172.16.0.2', bfd: ['set', [['named-uuid', 'b']]] } },
      { op: 'mutate', table: 'Logical_Router', where: [['name', '==', 'lr0']], mutations: [['static_routes', 'insert', ['set', [['named-uuid', 'r']]]]] },
    ] : []),
  ]);
}

const report = (uuid: string, status: string): unknown[] => [{ op: 'update', table: 'BFD', where: [['_uuid', '==', ['uuid', uuid]]], row: { status } }];

t.test('version 5: a session a route uses settles down; a chassis reporting it up brings the route in', async (t) => {
  const m = machine(APPLY_VERSION_BFD);
  topology(m);
  t.equal(m.nbStatus('172.16.0.2'), 'down', 'NB: down, as ovn-northd writes it for a used session');
  const row = m.sbRow('172.16.0.2');
  t.equal(row?.status, 'down', 'SB: down');
  t.ok(row !== undefined && row.src_port >= 49152 && row.src_port <= 65534 && row.disc > 0, 'a source port and a discriminator');
  t.same(m.routeFlows(), [], 'the route is out while the session is down');
  const events: CommitEvent[] = [];
  m.sm.onCommit((e) => events.push(e));
  const out = m.sb(report((row as sb.BFD)._uuid, 'up'));
  t.match(out, { kind: 'committed', results: [{ count: 1 }] }, 'the chassis\'s report is accepted');
  t.equal(m.nbStatus('172.16.0.2'), 'up', 'NB: up, copied from the report in the same entry');
  t.equal(m.sbRow('172.16.0.2')?.status, 'up', 'SB: up');
  t.same(m.routeFlows(), ['reg7 == 0 && ip4.dst == 10.9.0.0/16', 'reg7 == 0 && ip4.dst == 10.9.0.0/16 && udp.dst == 3784'], 'the route is in, with its port\'s BFD messages passed on');
  t.ok(events.some((e) => e.delta.changes.some((c) => c.table === 'BFD' && c.kind === 'modify')), 'watchers see the NB status change');
  // A client writing down over up gets up back; admin_down over a used session: down.
  m.nb(report([...m.sm.nb.rows('BFD').keys()][0] as string, 'down'));
  t.equal(m.nbStatus('172.16.0.2'), 'up', 'a client\'s down over up is undone');
  m.nb(report([...m.sm.nb.rows('BFD').keys()][0] as string, 'admin_down'));
  t.equal(m.nbStatus('172.16.0.2'), 'down', 'a client\'s admin_down on a used session: down');
  t.same(m.routeFlows(), [], 'and the route is out');
  // Reported down by the chassis after up; then the route taken off: admin_down.
  m.sb(report((row as sb.BFD)._uuid, 'init'));
  t.equal(m.nbStatus('172.16.0.2'), 'init', 'init reported');
  t.same(m.routeFlows().length, 2, 'a route watched by a session in init is in (only down takes it out)');
  m.nb([{ op: 'update', table: 'Logical_Router', where: [['name', '==', 'lr0']], row: { static_routes: ['set', []] } }]);
  t.equal(m.nbStatus('172.16.0.2'), 'admin_down', 'no route uses it: admin_down');
  t.equal(m.sbRow('172.16.0.2')?.status, 'admin_down');
  // A report on an unused session changes nothing (ovn-northd writes admin_down back).
  const rev = m.sm.revision;
  m.sb(report((row as sb.BFD)._uuid, 'up'));
  t.equal(m.nbStatus('172.16.0.2'), 'admin_down', 'a report on an unused session: still admin_down');
  t.equal(m.sm.revision, rev + 1);
});

t.test('bad reports change nothing', async (t) => {
  const m = machine(APPLY_VERSION_BFD);
  topology(m);
  const uuid = (m.sbRow('172.16.0.2') as sb.BFD)._uuid;
  const digest = (): string => JSON.stringify([...m.sm.nb.rows('BFD').values()].map((r: Row) => [r._uuid, r.status]));
  const before = digest();
  const refused = (ops: unknown[], why: RegExp, what: string): void => {
    const out = m.sb(ops) as { kind: string; results?: unknown[] };
    t.equal(out.kind, 'failed', what);
    t.match(JSON.stringify(out.results), why, `${what}: says why`);
    t.equal(digest(), before, `${what}: nothing changed`);
  };
  refused([{ op: 'update', table: 'BFD', where: [['_uuid', '==', ['uuid', uuid]]], row: { min_tx: 5 } }], /written by northd/, 'a column northd writes');
  refused([{ op: 'insert', table: 'BFD', row: { logical_port: 'x', dst_ip: '1.2.3.4' } }], /derived by northd/, 'an insert');
  refused([{ op: 'delete', table: 'BFD', where: [] }], /derived by northd/, 'a delete');
  refused(report(uuid, 'sideways'), /constraint|enum|syntax/i, 'a status the schema does not admit');
  refused([...report(uuid, 'up'), { op: 'insert', table: 'Port_Group', row: {} }], /derived by northd|read-only/, 'a good report beside a refused op');
  t.equal(m.nbStatus('172.16.0.2'), 'down');
});

t.test('before version 5: reports are refused, the NB keeps what clients wrote, the view settles it all the same; the move to 5 writes it', async (t) => {
  const m = machine(4);
  topology(m);
  t.same([...m.sm.nb.rows('BFD').values()].map((r) => r.status), [[]], 'NB: as the client wrote it');
  t.equal(m.sbRow('172.16.0.2')?.status, 'down', 'SB: settled as ovn-northd would');
  const out = m.sb(report((m.sbRow('172.16.0.2') as sb.BFD)._uuid, 'up')) as { kind: string; results?: unknown[] };
  t.equal(out.kind, 'failed', 'a report is refused');
  t.match(JSON.stringify(out.results), /apply version 5/, 'saying which version takes it');
  m.nb([{ op: 'insert', table: 'BFD', row: { logical_port: 'lr0-ext', dst_ip: '172.16.0.9', status: 'up' } }]);
  t.equal(m.sbRow('172.16.0.9')?.status, 'admin_down', 'unused: admin_down in the view');
  m.move(APPLY_VERSION_BFD);
  t.equal(m.nbStatus('172.16.0.2'), 'down', 'the move writes down');
  t.equal(m.nbStatus('172.16.0.9'), 'admin_down', 'and admin_down');
});
