// The OVN_Southbound door under hostile and wrong requests: writes to tables northd derives,
// Port_Binding updates of northd's columns, named uuids that name nothing, malformed selects
// and monitors on the derived view, garbage. Every request gets a JSON-RPC reply (an error where
// it is wrong), the door keeps serving, and neither the SB view nor the chassis tables change.
// Method: a seeded stream of 2,000 requests (OVNTS_LONG: 20,000) at the door of a follower of an
// in-process cluster, then the whole SB view compared with a snapshot taken before.
import t from 'tap';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { startSbDoorFixture } from '../helpers/sb-door-fixture.js';
import { Rng } from '../helpers/seeded-rng.js';

const SB = 'OVN_Southbound';
const requestsN = process.env.OVNTS_LONG ? 20_000 : 2_000;
const seed = Number(process.env.OVNTS_SEED ?? 7);

const derivedTables = ['Logical_Flow', 'Datapath_Binding', 'Port_Binding', 'Multicast_Group', 'SB_Global', 'Address_Set', 'Nope', ''];
const garbage: unknown[] = [null, 5, 'x', [], {}, [[]], { where: 5 }, ['uuid', 'not-a-uuid'], ['named-uuid', 'ghost'], ['set', [1, 'a']], ['map', 7]];

function hostileOp(rng: Rng, pbUuid: string): unknown {
  const table = rng.pick(derivedTables);
  switch (rng.int(0, 8)) {
    case 0:
      return { op: 'insert', table, row: { [rng.pick(['name', 'tunnel_key', 'match', 'nb_cfg'])]: rng.pick(garbage) } };
    case 1:
      return { op: 'delete', table, where: rng.pick<unknown>([[], [['_uuid', '==', ['uuid', pbUuid]]], garbage]) };
    case 2:
      return { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', pbUuid]]], row: { [rng.pick(['tunnel_key', 'logical_port', 'mac', 'datapath', 'options'])]: rng.pick(garbage) } };
    case 3:
      return { op: 'update', table: 'Port_Binding', where: [], row: { chassis: ['named-uuid', 'ghost'] } };
    case 4:
      return { op: 'update', table: 'Port_Binding', where: rng.pick<unknown>([5, [['nope', '==', 1]], [['logical_port', 'like', 'x']]]), row: { up: true } };
    case 5:
      return { op: 'mutate', table, where: [], mutations: [['tunnel_key', '+=', 1]] };
    case 6:
      return { op: rng.pick(['frob', 5, null]), table };
    case 7:
      return rng.pick(garbage);
    default:
      return { op: 'insert', table: 'Chassis', row: { name: 'x', encaps: rng.pick<unknown>([['set', []], ['named-uuid', 'ghost'], 5]) } };
  }
}

function hostileRequest(rng: Rng, pbUuid: string): [string, unknown[]] {
  switch (rng.int(0, 5)) {
    case 0:
    case 1:
    case 2:
      return ['transact', [SB, ...Array.from({ length: rng.int(1, 3) }, () => hostileOp(rng, pbUuid))]];
    case 3:
      return ['transact', [SB, { op: 'select', table: rng.pick(derivedTables), where: rng.pick<unknown>([[], 5, [['logical_port', '==', 5]], [['_uuid', '==', 'x']], [['tunnel_key', '<', 3]]]), columns: rng.pick<unknown>([undefined, ['nope'], 5, ['logical_port']]) }]];
    case 4:
      return [rng.pick(['monitor', 'monitor_cond', 'monitor_cond_since']), [SB, `m${rng.int(0, 1e9)}`, rng.pick<unknown>([{ Nope: {} }, { Port_Binding: { columns: ['nope'] } }, { Logical_Flow: [{ where: [['match', 'like', 'x']] }] }, 5])]];
    default:
      return [rng.pick(['get_schema', 'lock', 'monitor_cancel', 'frob']), [rng.pick(garbage)]];
  }
}

t.test(`${requestsN} hostile requests to the OVN_Southbound door change nothing (seed ${seed})`, async (t) => {
  const fx = await startSbDoorFixture(t);
  const address = fx.address;
  const before = fx.snapshot();
  const pbUuid = fx.pbUuid;

  const rng = new Rng(seed);
  let c = await JsonRpcClient.connect(address, { requestTimeoutMs: 20_000 });
  let replies = 0;
  let errors = 0;
  for (let i = 0; i < requestsN; i++) {
    const [method, params] = hostileRequest(rng, pbUuid);
    try {
      const result = await c.request(method, params);
      replies++;
      if (Array.isArray(result) && result.some((r) => r !== null && typeof r === 'object' && 'error' in r)) errors++;
    } catch (err) {
      const e = err as { kind?: string; error?: unknown };
      if (e.kind === 'connection closed') {
        c = await JsonRpcClient.connect(address, { requestTimeoutMs: 20_000 });
        continue;
      }
      errors++;
      replies++;
    }
  }
  await c.close();
  t.equal(replies, requestsN, `every request answered (${errors} errors)`);
  const fresh = await JsonRpcClient.connect(address);
  t.same(await fresh.request('list_dbs', []), [SB, '_Server'], 'the door still serves');
  await fresh.close();
  await fx.caughtUp();
  t.equal(fx.snapshot(), before, 'the SB view and the chassis tables are unchanged');
});
