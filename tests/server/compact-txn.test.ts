// An IDL's verify-then-write transaction on a large set (ovn-nbctl lsp-add on a switch of
// hundreds of ports), logged written small for the state it meets (ovsdb/compact.ts) when the
// leader has every entry applied: the client hears what it would have heard, every member ends
// with the same state byte for byte, and a transaction that arrives while others are in
// flight goes into the log as it came.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { startCentralCluster, type CentralMember } from '../helpers/central-cluster.js';

const PORTS = 150;

const portsOf = (m: CentralMember, table: string, name: string): string[] => {
  const row = [...m.central.sm.nb.rows(table).values()].find((r) => r.name === name) as Row;
  return [...(row.ports as readonly string[])];
};

/** ovn-nbctl's shape: verify the switch's and the port group's ports, write both whole, insert the port. */
function idlPortAdd(m: CentralMember, name: string, stale = false): unknown[] {
  const sw = [...m.central.sm.nb.rows('Logical_Switch').values()].find((r) => r.name === 'sw0') as Row;
  const pg = [...m.central.sm.nb.rows('Port_Group').values()].find((r) => r.name === 'pg0') as Row;
  const set = (uuids: readonly string[]): unknown => ['set', uuids.map((u) => ['uuid', u])];
  const swPorts = portsOf(m, 'Logical_Switch', 'sw0');
  const pgPorts = portsOf(m, 'Port_Group', 'pg0');
  const verified = stale ? swPorts.slice(1) : swPorts;
  const withNew = (uuids: readonly string[]): unknown => ['set', [...uuids.map((u) => ['uuid', u]), ['named-uuid', 'np']]];
  return [
    { op: 'wait', table: 'Port_Group', where: [['_uuid', '==', ['uuid', pg._uuid]]], columns: ['ports'], until: '==', timeout: 0, rows: [{ ports: set(pgPorts) }] },
    { op: 'wait', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', sw._uuid]]], columns: ['ports'], until: '==', timeout: 0, rows: [{ ports: set(verified) }] },
    { op: 'update', table: 'Port_Group', where: [['_uuid', '==', ['uuid', pg._uuid]]], row: { ports: withNew(pgPorts) } },
    { op: 'update', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', sw._uuid]]], row: { ports: withNew(swPorts) } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'np', row: { name, addresses: 'unknown' } },
  ];
}

t.test('verify-then-write transactions on large sets', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compact-txn-'));
  const cluster = await startCentralCluster(dir);
  t.teardown(async () => {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const follower = cluster.members.find((m) => m !== leader) as CentralMember;
  const named = Array.from({ length: PORTS }, (_, k) => ['named-uuid', `p${k}`]);
  await leader.client.transact([
    ...Array.from({ length: PORTS }, (_, k) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': `p${k}`, row: { name: `p${k}` } })),
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', named] } },
    { op: 'insert', table: 'Port_Group', row: { name: 'pg0', ports: ['set', named] } },
  ]);
  const converged = async (what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    const revision = leader.central.revision;
    for (const m of cluster.members) while (m.central.revision < revision && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const snaps = cluster.members.map((m) => Buffer.from(m.central.sm.snapshot()));
    t.ok(snaps.every((s) => s.equals(snaps[0] as Buffer)), `${what}: every member holds the same state, byte for byte`);
  };
  await converged('after the setup');

  const counters = leader.central.nbGroups.counters;
  for (const [via, label] of [
    [leader, 'through the leader'],
    [follower, 'through a follower'],
  ] as const) {
    // The follower forwards: the leader writes it small. Wait until the follower has caught up,
    // so the client verifies what is there.
    await converged(`before the write ${label}`);
    const compactedBefore = counters.compacted;
    const name = `new-${label.split(' ').pop()}`;
    const out = await via.client.transact(idlPortAdd(via, name));
    t.notOk(out.failed, `committed ${label}`);
    t.same(out.results.slice(0, 4), [{}, {}, { count: 1 }, { count: 1 }], 'the waits and the updates answer as they were sent');
    t.match(out.results[4], { uuid: ['uuid', /^[0-9a-f-]{36}$/] }, 'the insert answers with its UUID');
    t.equal(counters.compacted, compactedBefore + 1, 'the leader logged it written small');
    await converged(`after the write ${label}`);
    for (const m of cluster.members) {
      const port = [...m.central.sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === name) as Row;
      t.ok(portsOf(m, 'Logical_Switch', 'sw0').includes(port._uuid) && portsOf(m, 'Port_Group', 'pg0').includes(port._uuid), `member ${m.central.node.id} has the new port in the switch and the group`);
    }
  }

  const stale = await leader.client.transact(idlPortAdd(leader, 'stale', true));
  t.ok(stale.failed, 'a stale verify fails');
  t.match(JSON.stringify(stale.results), /timed out/, 'as "timed out", as ovsdb-server answers a wait of timeout 0');
  t.equal(portsOf(leader, 'Logical_Switch', 'sw0').length, PORTS + 2, 'and changes nothing');

  // Many at once: only the first finds the log quiet; the others go as they came, and each
  // verify after the first meets a set the first changed.
  const compactedBefore = counters.compacted;
  const many = await Promise.all(Array.from({ length: 12 }, (_, k) => leader.client.transact(idlPortAdd(leader, `burst-${k}`))));
  const committed = many.filter((o) => !o.failed).length;
  t.equal(committed, 1, 'one of a burst of verifies of the same set commits; the rest find it changed');
  t.ok(counters.compacted - compactedBefore <= 1, `at most the first of the burst was written small (${counters.compacted - compactedBefore})`);
  await converged('after the burst');
});
