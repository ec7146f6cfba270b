// Goal: no request, however malformed, crashes a central node, goes unanswered or changes the NB.
// Method: 3,000 seeded random invalid requests (OVNTS_LONG: 100,000) to three nodes' real gRPC
// Northbound servers, typed and as raw bytes; each must be a clear error; every dump is unchanged.
import { randomInt } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadProto } from '../../cluster/grpc-proto.js';
import { dumpDatabaseJson } from '../../ovsdb/index.js';
import type { CentralNode } from '../../server/central-node.js';
import { NorthboundClient, northboundDefinition, northboundLimits } from '../../server/northbound-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { Rng } from '../helpers/seeded-rng.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const requestsN = Number(process.env.OVNTS_REQUESTS ?? (process.env.OVNTS_LONG ? 100_000 : 3_000));
const inFlight = 32;
const seed = Number(process.env.OVNTS_SEED ?? randomInt(2 ** 31));
const callTimeoutMs = 30_000;
/**
 * A request of several MB (the 'huge array' probes: up to 150,000 operations, 4.5 MB of text)
 * goes through HTTP/2's flow control (grpc-js leaves the server's window at HTTP/2's 64 KB)
 * beside 31 other requests on the connection. In a long run on a machine busy with other
 * suites, 5 of 100,000 requests were not answered within 30 s, all of them such uploads (seed
 * 1443722341); with that seed on a quiet machine, every one was refused. They get longer:
 * still a deadline, so a request never answered fails.
 */
const hugeRequestChars = 1_000_000;
const hugeCallTimeoutMs = 120_000;
const failuresShownMax = 10;
/**
 * The longest name the random run puts where a refusal echoes it into the gRPC status details
 * (a List table). Much longer ones make the status trailer too big for HTTP/2 and the client's
 * connection hung: see the regression test at the end.
 */
const echoedNameCharsMax = 32_000;

interface Member {
  central: CentralNode;
  server: grpc.Server;
  address: string;
  client: NorthboundClient;
  /** The generic grpc-js client: typed messages, but ops_json and where_json as we write them. */
  generic: grpc.Client;
  /** No serializers at all: the request is the protobuf message's bytes. */
  raw: grpc.Client;
}

/** The shared in-process cluster, plus a generic and a raw client per member. */
async function startCluster(dir: string): Promise<{ members: Member[]; stop: () => Promise<void> }> {
  const cluster = await startCentralCluster(dir);
  const Generic = grpc.makeGenericClientConstructor(northboundDefinition(), 'Northbound');
  const credentials = grpc.credentials.createInsecure();
  const members: Member[] = cluster.members.map((m) => ({ ...m, generic: new Generic(m.address, credentials), raw: new grpc.Client(m.address, credentials) }));
  return {
    members,
    stop: async () => {
      for (const m of members) {
        m.generic.close();
        m.raw.close();
      }
      await cluster.stop();
    },
  };
}

// ---- Requests ------------------------------------------------------------------------------

interface ListRequest {
  table: string;
  whereJson: string;
  columns: string[];
  consistency: 'LINEARIZABLE' | 'SERIALIZABLE';
  db: string;
}

/** One invalid request, as a closed tagged union; `what` names its generator for the report. */
type Probe =
  | { readonly kind: 'transact-value'; readonly what: string; readonly ops: unknown[] }
  | { readonly kind: 'transact-text'; readonly what: string; readonly opsJson: string }
  | { readonly kind: 'list'; readonly what: string; readonly req: ListRequest }
  | { readonly kind: 'watch'; readonly what: string; readonly tables: string[] }
  | { readonly kind: 'raw'; readonly what: string; readonly method: 'Transact' | 'List'; readonly bytes: Buffer };

const nbTables = ['Logical_Switch', 'Logical_Switch_Port', 'ACL', 'Logical_Router', 'NB_Global', 'Port_Group'];

function ident(rng: Rng, lengthMax = 12): string {
  const first = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_';
  const rest = `${first}0123456789`;
  let s = rng.pick([...first]);
  for (let i = rng.int(0, lengthMax); i > 0; i--) s += rng.pick([...rest]);
  return s;
}

/** A name no NB table, column, op, function or mutator has (they never start with "zz"). */
const unknownName = (rng: Rng): string => `zz${ident(rng)}`;

function randomText(rng: Rng, lengthMax: number): string {
  let s = '';
  for (let i = rng.int(0, lengthMax); i > 0; i--) s += String.fromCharCode(rng.chance(0.9) ? rng.int(0x20, 0x7e) : rng.int(0, 0xffff));
  return s;
}

function nested(rng: Rng, depth: number): string {
  return rng.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const validInsert = (rng: Rng): unknown => ({ op: 'insert', table: 'Logical_Switch', row: { name: `fresh-${ident(rng)}` } });

/** Wraps one bad operation between valid inserts that must not survive it (no half-apply). */
function around(rng: Rng, bad: unknown): unknown[] {
  const before = Array.from({ length: rng.int(0, 3) }, () => validInsert(rng));
  const after = Array.from({ length: rng.int(0, 2) }, () => validInsert(rng));
  return [...before, bad, ...after];
}

/** A JSON value of the wrong type for a string, integer, set or map column. */
function wrongValue(rng: Rng, expected: 'string' | 'integer' | 'set-of-uuid' | 'map'): unknown {
  const choices: unknown[] = [true, null, {}, { a: 1 }, ['uuid', 'not-a-uuid'], ['set', [1, 'x', true]], ['map', 'x'], ['map', [[1]]], ['named-uuid', 5], ['zzz', 1], [], [1, 2, 3]];
  if (expected !== 'string') choices.push('a string');
  if (expected !== 'integer') choices.push(7, -1.5);
  else choices.push(1.5, 1e300, '12');
  return rng.pick(choices);
}

/** Generators of invalid transactions, each with a weight. */
const transactGenerators: readonly (readonly [string, number, (rng: Rng, ctx: Context) => unknown[] | string])[] = [
  ['malformed JSON text', 8, (rng) => {
    const good = JSON.stringify(around(rng, validInsert(rng)));
    const variants = [good.slice(0, rng.int(0, good.length - 1)), `${good}${rng.pick([',', ']', '}', 'x', '[', '"'])}`, good.replace(/"/, "'"), randomText(rng, 200), `[${rng.pick(['NaN', 'undefined', '0x10', '.5', '01', 'tru', "'a'"])}]`, good.replace(':', '=')];
    const text = rng.pick(variants);
    try {
      JSON.parse(text);
    } catch {
      return text;
    }
    return `${text}{`;
  }],
  ['not an array of operations', 5, (rng) => JSON.stringify(rng.pick<unknown>([{}, { op: 'insert' }, 1, 'insert', null, true, -0.5]))],
  ['operation of the wrong shape', 8, (rng) =>
    around(rng, rng.pick<unknown>([
      1, 'insert', null, [], ['insert', 'Logical_Switch'],
      { table: 'Logical_Switch', row: {} },
      { op: 5, table: 'Logical_Switch', row: {} },
      { op: 'insert', row: {} },
      { op: 'insert', table: 7, row: {} },
      { op: 'insert', table: 'Logical_Switch', row: [] },
      { op: 'insert', table: 'Logical_Switch', row: 'name=x' },
      { op: 'insert', table: 'Logical_Switch', row: {}, 'uuid-name': 5 },
      { op: 'insert', table: 'Logical_Switch', row: {}, 'uuid-name': '9bad' },
      { op: 'select', table: 'Logical_Switch', where: {} },
      { op: 'select', table: 'Logical_Switch' },
      { op: 'update', table: 'Logical_Switch', where: [], row: 5 },
      { op: 'mutate', table: 'Logical_Switch', where: [], mutations: {} },
      { op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['name']] },
      { op: 'delete', table: 'Logical_Switch', where: [[]] },
      { op: 'delete', table: 'Logical_Switch', where: [['name', '==']] },
      { op: 'select', table: 'Logical_Switch', where: [], columns: 'name' },
      { op: 'wait', table: 'Logical_Switch', where: [], columns: ['name'], until: '!=', rows: 'x', timeout: 0 },
      { op: 'comment', comment: 5 },
    ]))],
  ['unknown table', 6, (rng) => around(rng, { op: rng.pick(['insert', 'select', 'delete']), table: unknownName(rng), row: {}, where: [] })],
  ['unknown column', 8, (rng) => {
    const col = unknownName(rng);
    return around(rng, rng.pick<unknown>([
      { op: 'insert', table: rng.pick(nbTables), row: { [col]: 1 } },
      { op: 'select', table: rng.pick(nbTables), where: [[col, '==', 1]] },
      { op: 'select', table: rng.pick(nbTables), where: [], columns: [col] },
      { op: 'update', table: 'Logical_Switch', where: [], row: { [col]: 'x' } },
      { op: 'mutate', table: 'Logical_Switch', where: [], mutations: [[col, '+=', 1]] },
    ]));
  }],
  ['unknown op', 5, (rng) => around(rng, { op: rng.pick([unknownName(rng), 'INSERT', '', 'insert ', 'transact', 'get']), table: 'Logical_Switch', row: {}, where: [] })],
  ['unknown or misapplied condition function', 6, (rng) =>
    around(rng, { op: rng.pick(['select', 'delete', 'update']), table: 'Logical_Switch', row: {}, where: [['name', rng.pick([unknownName(rng), 'like', '===', '=~', '', '<', '>=']), 'x']] })],
  ['unknown or misapplied mutator', 6, (rng) =>
    around(rng, { op: 'mutate', table: 'Logical_Switch_Port', where: [], mutations: [rng.pick<unknown>([['tag', unknownName(rng), 1], ['tag', 'append', 1], ['name', '+=', 'x'], ['name', '*=', 2], ['addresses', '+=', 1], ['tag', '+=', 'x'], ['_uuid', 'insert', ['set', []]]])] })],
  ['wrong atom type', 10, (rng) => {
    const [table, column, expected] = rng.pick<readonly [string, string, 'string' | 'integer' | 'set-of-uuid' | 'map']>([
      ['Logical_Switch', 'name', 'string'], ['Logical_Switch', 'ports', 'set-of-uuid'], ['Logical_Switch', 'external_ids', 'map'],
      ['Logical_Switch_Port', 'tag', 'integer'], ['Logical_Switch_Port', 'options', 'map'], ['ACL', 'priority', 'integer'], ['ACL', 'label', 'integer'],
    ]);
    const value = wrongValue(rng, expected);
    return around(rng, rng.pick<unknown>([
      { op: 'insert', table, row: { [column]: value } },
      { op: 'update', table, where: [], row: { [column]: value } },
      { op: 'select', table, where: [[column, '==', value]] },
    ]));
  }],
  ['out-of-range value', 8, (rng) => {
    const port = rng.pick(['Logical_Switch_Port', 'ACL']);
    const row = port === 'ACL'
      ? rng.pick<Record<string, unknown>>([{ priority: rng.pick([-1, 32768, 2 ** 53]) }, { direction: rng.pick(['sideways', '', 'TO-LPORT']) }, { action: unknownName(rng) }, { label: rng.pick([-1, 2 ** 32]) }, { name: 'n'.repeat(64) }, { severity: 'loud' }])
      : rng.pick<Record<string, unknown>>([{ tag: rng.pick([0, 4096, -1, 2 ** 53]) }, { tag_request: rng.pick([-1, 4096, 99999]) }, { tag: ['set', [1, 2]] }]);
    // An insert of a non-root row alone is precheck-refused or collected; an update of an
    // existing port is refused only at apply, after the log: both must leave the NB as it was.
    return around(rng, rng.chance(0.5) ? { op: 'insert', table: port, row } : { op: 'update', table: 'Logical_Switch_Port', where: [], row: port === 'ACL' ? { tag: 5000 } : row });
  }],
  ['failure at apply, after the log', 8, (rng, ctx) =>
    around(rng, rng.pick<unknown>([
      { op: 'abort' },
      { op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]], mutations: [['tag', rng.pick(['+=', '*=']), 10_000]] },
      { op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]], mutations: [['tag', rng.pick(['/=', '%=']), 0]] },
      { op: 'insert', table: 'Logical_Switch', row: { name: 'dangling', ports: ['set', [['uuid', rng.uuid()]]] } },
      { op: 'insert', table: 'Logical_Switch', row: { name: 'dup', ports: ['set', [['named-uuid', 'p1'], ['named-uuid', 'p2']]] } },
      { op: 'insert', table: 'Logical_Switch', row: { name: 'named', ports: ['named-uuid', 'nope'] } },
      { op: 'wait', table: 'Logical_Switch', where: [['name', '==', ctx.switchName]], columns: ['name'], until: '!=', rows: [{ name: ctx.switchName }], timeout: 0 },
      { op: 'delete', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]] },
    ])).concat(rng.chance(0.3) ? [{ op: 'abort' }] : []).concat(
      // The duplicate-name case needs its two ports; with another bad op they are harmless.
      [{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p1', row: { name: 'same' } }, { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p2', row: { name: 'same' } }],
    )],
  ['oversized string', 3, (rng) => {
    const big = 'x'.repeat(rng.int(64 * 1024, 512 * 1024));
    return around(rng, rng.pick<unknown>([
      { op: 'insert', table: big, row: {} },
      { op: 'insert', table: 'Logical_Switch', row: { [big]: 1 } },
      { op: big, table: 'Logical_Switch', row: {} },
      { op: 'insert', table: 'ACL', row: { action: big } },
      { op: 'select', table: 'Logical_Switch', where: [['name', big, 'x']] },
    ]));
  }],
  ['deeply nested JSON', 4, (rng) => {
    const deep = nested(rng, rng.int(1000, 50_000));
    return rng.pick([
      deep,
      `[{"op":"insert","table":"Logical_Switch","row":{"name":${deep}}}]`,
      `[{"op":"select","table":"Logical_Switch","where":[["name","==",${deep}]]}]`,
      `[{"op":"mutate","table":"Logical_Switch","where":[],"mutations":[["external_ids","insert",${deep}]]}]`,
      `[{"op":"insert","table":"Logical_Switch","row":{"external_ids":["map",[["k",${deep}]]]}}]`,
    ]);
  }],
  ['huge array', 2, (rng) => {
    const n = rng.int(100_001, 150_000);
    return rng.pick([
      `[${Array.from({ length: n }, () => '1').join(',')}]`,
      `[${Array.from({ length: n }, () => '{"op":"comment","comment":"c"}').join(',')}]`,
      JSON.stringify(around(rng, { op: 'insert', table: 'Logical_Switch', row: { name: ['set', Array.from({ length: rng.int(2, 50_000) }, (_, i) => `n${i}`)] } })),
      JSON.stringify(around(rng, { op: 'insert', table: 'Logical_Switch', row: { ports: ['set', Array.from({ length: rng.int(2, 50_000) }, () => ['uuid', 'bad'])] } })),
    ]);
  }],
];

interface Context {
  /** Rows that exist before the probes (the seed topology), for probes that touch real rows. */
  readonly switchName: string;
  readonly portName: string;
}

const listGenerators: readonly (readonly [string, number, (rng: Rng) => Partial<ListRequest>])[] = [
  // Names up to echoedNameCharsMax in the random run; a longer one has its own regression test below.
  ['list: unknown table', 3, (rng) => ({ table: rng.chance(0.1) ? 'T'.repeat(rng.int(10_000, echoedNameCharsMax)) : unknownName(rng) })],
  ['list: unknown database', 2, (rng) => ({ db: rng.pick([unknownName(rng), 'ovn_northbound', 'Open_vSwitch', '_Server']) })],
  ['list: unknown OVN_Southbound table', 2, (rng) => ({ db: 'OVN_Southbound', table: unknownName(rng) })],
  ['list: malformed where_json', 3, (rng) => ({ whereJson: rng.pick(['[', '[["name","==","x"]', '{', 'x', "[['name']]", randomText(rng, 100) + '{']) })],
  ['list: where of the wrong shape', 3, (rng) => ({ whereJson: JSON.stringify(rng.pick<unknown>([{}, 5, 'name', [5], [[]], [['name']], [['name', '==']], [['name', '==', 'x', 'y']], [[1, '==', 'x']]])) })],
  ['list: unknown column or function', 3, (rng) => ({ whereJson: JSON.stringify([rng.pick([[unknownName(rng), '==', 1], ['name', unknownName(rng), 'x'], ['name', 'like', 'x']])]) })],
  ['list: condition of the wrong type', 3, (rng) => ({ whereJson: JSON.stringify([['name', '==', wrongValue(rng, 'string')]]) })],
  ['list: deeply nested where', 1, (rng) => ({ whereJson: `[["name","==",${nested(rng, rng.int(1000, 50_000))}]]` })],
  ['list: unknown columns', 2, (rng) => ({ columns: Array.from({ length: rng.chance(0.1) ? rng.int(1000, 20_000) : rng.int(1, 5) }, () => unknownName(rng)) })],
];

/** Invalid UTF-8 sequences: lone continuation bytes, overlongs, surrogates, truncated sequences. */
const invalidUtf8 = [[0xff], [0xfe], [0x80], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc3], [0xe2, 0x82]];

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** A protobuf length-delimited field (wire type 2): strings and nested messages. */
const field = (n: number, bytes: Buffer): Buffer => Buffer.concat([varint((n << 3) | 2), varint(bytes.length), bytes]);

/** `text` with invalid UTF-8 bytes spliced in at the marker "§". */
function withBadUtf8(rng: Rng, text: string): Buffer {
  const [head, tail] = text.split('§') as [string, string];
  return Buffer.concat([Buffer.from(head), Buffer.from(rng.pick(invalidUtf8)), Buffer.from(tail)]);
}

const rawGenerators: readonly (readonly [string, number, (rng: Rng) => Omit<Extract<Probe, { kind: 'raw' }>, 'kind' | 'what'>])[] = [
  ['raw: random bytes as the message', 6, (rng) => ({ method: rng.pick(['Transact', 'List'] as const), bytes: Buffer.from(Array.from({ length: rng.int(0, 300) }, () => rng.int(0, 255))) })],
  ['raw: truncated or corrupted message', 3, (rng) => {
    const good = field(1, Buffer.from(JSON.stringify(around(rng, { op: 'abort' }))));
    const bytes = rng.chance(0.5) ? good.subarray(0, rng.int(1, good.length - 1)) : Buffer.concat([good, Buffer.from([rng.pick([0x0a, 0x12, 0xff, 0x07])])]);
    return { method: 'Transact', bytes };
  }],
  ['raw: invalid UTF-8 in a string of a bad transaction', 3, (rng) => {
    const text = rng.pick([
      `[{"op":"insert","table":"Logical_Switch","row":{"name":"ok","zz§":1}}]`,
      `[{"op":"insert","table":"zz§","row":{}}]`,
      `[{"op":"insert§","table":"Logical_Switch","row":{}}]`,
      `[{"op":"insert","table":"Logical_Switch","row":{"name":"a§"}},{"op":"abort"}]`,
      `[{"op":"select","table":"Logical_Switch","where":[["name","zz§","x"]]}]`,
    ]);
    return { method: 'Transact', bytes: field(1, withBadUtf8(rng, text)) };
  }],
  ['raw: invalid UTF-8 in a List table or column', 2, (rng) => {
    const bytes = rng.chance(0.5) ? field(1, withBadUtf8(rng, 'Logical_Switch§')) : Buffer.concat([field(1, Buffer.from('Logical_Switch')), field(3, withBadUtf8(rng, 'na§me'))]);
    return { method: 'List', bytes };
  }],
];

const watchWeight = 1;

function makeProbe(rng: Rng, ctx: Context): Probe {
  const family = rng.weighted<'transact' | 'list' | 'raw' | 'watch'>([['transact', 100], ['list', 22], ['raw', 14], ['watch', watchWeight]]);
  switch (family) {
    case 'transact': {
      const [what, , gen] = rng.weighted(transactGenerators.map((g) => [g, g[1]] as const));
      const out = gen(rng, ctx);
      if (typeof out === 'string') return { kind: 'transact-text', what, opsJson: out };
      return rng.chance(0.5) ? { kind: 'transact-value', what, ops: out } : { kind: 'transact-text', what, opsJson: JSON.stringify(out) };
    }
    case 'list': {
      const [what, , gen] = rng.weighted(listGenerators.map((g) => [g, g[1]] as const));
      const req: ListRequest = { table: 'Logical_Switch', whereJson: '', columns: [], consistency: rng.pick(['LINEARIZABLE', 'SERIALIZABLE'] as const), db: '', ...gen(rng) };
      return { kind: 'list', what, req };
    }
    case 'raw': {
      const [what, , gen] = rng.weighted(rawGenerators.map((g) => [g, g[1]] as const));
      return { kind: 'raw', what, ...gen(rng) };
    }
    case 'watch':
      return { kind: 'watch', what: 'watch: unknown table', tables: ['Logical_Switch', unknownName(rng)] };
  }
}

// ---- Sending and judging -------------------------------------------------------------------

/** What came back: a status, or a reply (a transaction's results), or for a watch its first event. */
type Outcome = { readonly kind: 'status'; readonly code: grpc.status; readonly details: string } | { readonly kind: 'reply'; readonly failed: boolean; readonly results: unknown };

const transactReply = loadProto('northbound.proto').lookupType('ovnts.northbound.TransactReply');

function statusOrReply<T>(resolve: (o: Outcome) => void, onReply: (res: T) => Outcome): (err: grpc.ServiceError | null, res?: unknown) => void {
  return (err, res) => {
    if (err) resolve({ kind: 'status', code: err.code, details: err.details });
    else resolve(onReply(res as T));
  };
}

const txnReply = (res: { resultsJson: string; failed: boolean }): Outcome => ({ kind: 'reply', failed: res.failed, results: JSON.parse(res.resultsJson) as unknown });

function send(m: Member, p: Probe): Promise<Outcome> {
  const deadline = Date.now() + (p.kind === 'transact-text' && p.opsJson.length > hugeRequestChars ? hugeCallTimeoutMs : callTimeoutMs);
  const generic = m.generic as unknown as Record<string, (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void>;
  return new Promise<Outcome>((resolve) => {
    switch (p.kind) {
      case 'transact-value':
        m.client.transact(p.ops).then(
          (out) => resolve({ kind: 'reply', failed: out.failed, results: out.results }),
          (err: grpc.ServiceError) => resolve({ kind: 'status', code: err.code, details: err.details }),
        );
        return;
      case 'transact-text':
        generic.transact?.call(m.generic, { opsJson: p.opsJson }, { deadline }, statusOrReply(resolve, txnReply));
        return;
      case 'list':
        generic.list?.call(m.generic, p.req, { deadline }, statusOrReply(resolve, (res: { rowsJson: string }) => ({ kind: 'reply', failed: false, results: res.rowsJson.slice(0, 200) })));
        return;
      case 'raw': {
        const identity = (b: Buffer): Buffer => b;
        m.raw.makeUnaryRequest(`/ovnts.northbound.Northbound/${p.method}`, identity, identity, p.bytes, { deadline }, statusOrReply(resolve, (res: Buffer) => {
          if (p.method === 'List') return { kind: 'reply', failed: false, results: 'rows' };
          const r = transactReply.toObject(transactReply.decode(res), { defaults: true }) as { resultsJson: string; failed: boolean };
          return txnReply(r);
        }));
        return;
      }
      case 'watch': {
        const stream = m.client.watch(p.tables, 0);
        stream.on('data', () => {
          stream.cancel();
          resolve({ kind: 'reply', failed: false, results: 'a watch event' });
        });
        stream.on('error', (err: grpc.ServiceError) => resolve({ kind: 'status', code: err.code, details: err.details }));
        return;
      }
    }
  });
}

/** Undefined when the outcome is a clear error; else why not. */
function judge(o: Outcome): string | undefined {
  if (o.kind === 'status') {
    if (o.code === grpc.status.OK) return 'status OK';
    if (o.code === grpc.status.DEADLINE_EXCEEDED || o.code === grpc.status.UNAVAILABLE) return `no answer: ${grpc.status[o.code]} ${o.details}`;
    if (o.details.length === 0) return `status ${grpc.status[o.code]} without details`;
    return undefined;
  }
  if (!o.failed) return `accepted: ${JSON.stringify(o.results).slice(0, 300)}`;
  const errors = Array.isArray(o.results) ? o.results.filter((r): r is { error: unknown } => r !== null && typeof r === 'object' && 'error' in r) : [];
  if (errors.length === 0 || !errors.every((e) => typeof e.error === 'string' && e.error.length > 0)) return `failed without an RFC 7047 error object: ${JSON.stringify(o.results).slice(0, 300)}`;
  return undefined;
}

const describe = (p: Probe): string => {
  const body = p.kind === 'transact-value' ? JSON.stringify(p.ops) : p.kind === 'transact-text' ? p.opsJson : p.kind === 'list' ? JSON.stringify(p.req) : p.kind === 'raw' ? `${p.method} ${p.bytes.toString('hex')}` : JSON.stringify(p.tables);
  return `${p.what} (${p.kind}): ${body.length > 300 ? `${body.slice(0, 300)}... (${body.length} chars)` : body}`;
};

/** Every replica has applied everything committed: a linearizable read through each. */
async function dumps(members: readonly Member[]): Promise<string[]> {
  for (const m of members) await m.client.list('NB_Global');
  return members.map((m) => JSON.stringify(dumpDatabaseJson(m.central.sm.nb)));
}

t.test(`${requestsN} random invalid requests: each a clear error, servers up, NB unchanged (seed ${seed})`, async (t) => {
  t.comment(`seed=${seed} (replay: OVNTS_SEED=${seed} npm run test:one -- tests/server/bad-input.test.ts)`);
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members[0] as Member;
  // Some real rows, so that updates, mutations, deletes and waits have something to break.
  const ctx: Context = { switchName: 'keep0', portName: 'keep0-p0' };
  for (let i = 0; i < 5; i++) {
    const out = await leader.client.transact([
      { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: `keep${i}-p0`, tag: 100 + i, addresses: ['set', [`00:00:00:00:00:0${i} 10.0.0.${i + 1}`]] } },
      { op: 'insert', table: 'Logical_Switch', row: { name: `keep${i}`, ports: ['set', [['named-uuid', 'p']]], external_ids: ['map', [['k', `${i}`]]] } },
    ]);
    t.equal(out.failed, false, `seed row ${i}`);
  }
  const before = await dumps(members);
  t.equal(new Set(before).size, 1, 'the replicas agree before');

  const failures: string[] = [];
  let failedN = 0;
  const tally = new Map<string, number>();
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < requestsN) {
        const i = next++;
        // One generator per request: a failing index replays alone with the same seed.
        const rng = new Rng((seed + Math.imul(i, 0x9e3779b1)) >>> 0);
        const m = rng.pick(members);
        const probe = makeProbe(rng, ctx);
        const outcome = await send(m, probe);
        const why = judge(outcome);
        const key = `${probe.what} → ${outcome.kind === 'status' ? grpc.status[outcome.code] : outcome.failed ? 'failed transaction' : 'ACCEPTED'}`;
        tally.set(key, (tally.get(key) ?? 0) + 1);
        if (why !== undefined) failedN++;
        if (why !== undefined && failures.length < failuresShownMax) failures.push(`#${i} via n${m.central.id}: ${why}\n    request: ${describe(probe)}`);
      }
    }),
  );
  t.comment(`${requestsN} requests in ${Date.now() - started} ms; outcomes:\n${[...tally].sort().map(([k, n]) => `  ${String(n).padStart(6)}  ${k}`).join('\n')}`);
  t.same(failures, [], `every request is a clear error (${failedN} not; the first ${failuresShownMax} shown; seed ${seed})`);

  for (const m of members) {
    const { rows } = await m.client.list('Logical_Switch', [], { columns: ['name'] });
    t.equal(rows.length, 5, `node ${m.central.id} still serves`);
  }
  const after = await dumps(members);
  for (const [i, d] of after.entries()) t.equal(d, before[i], `node ${i + 1}: the NB is unchanged (seed ${seed})`);
});

// Defects this suite found, now fixed; each case stays as a regression test.
const todoCallMs = 5000;

t.test('a List refusal that echoes a 100,000-char table name', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const c = new NorthboundClient((members[0] as Member).address, todoCallMs);
  t.teardown(() => c.close());
  await t.rejects(c.list('T'.repeat(100_000)), { code: grpc.status.INVALID_ARGUMENT }, 'refused as INVALID_ARGUMENT');
  await t.resolves(c.list('Logical_Switch'), 'the next call on the same connection is answered');
});

// Status details are cut to 1,024 characters; a cut through a surrogate pair left half of it,
// and grpc-js's encodeURI of the details threw: the call went unanswered (found by the random
// requests above, seed 1492046206, a malformed JSON text of random characters).
t.test('a refusal whose echoed text is cut through a surrogate pair', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const c = new NorthboundClient((members[0] as Member).address, todoCallMs);
  t.teardown(() => c.close());
  // One of the two lengths puts the cut at 1,024 characters between the halves of a pair.
  for (const pad of ['', 'x']) {
    await t.rejects(c.list(`${pad}${'\u{1F600}'.repeat(2_000)}`), { code: grpc.status.INVALID_ARGUMENT }, `refused as INVALID_ARGUMENT (${pad.length} before the pairs)`);
  }
  await t.resolves(c.list('Logical_Switch'), 'the next call on the same connection is answered');
});

// Not among the random requests: grpc-js refuses such a request from its length prefix, but
// the client goes on uploading the rest of it (64 MiB here) to a server that drops it. A few of
// those among 8,000 requests in one process held its event loop long enough for 3-4.6 MB
// requests beside them to miss their 30 s deadline (measured under three CPU hogs).
t.test('a request over the server\'s bound on one message', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[1] as Member;
  const generic = m.generic as unknown as Record<string, (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void>;
  const opsJson = JSON.stringify([{ op: 'insert', table: 'Logical_Switch', row: { name: 'y'.repeat(northboundLimits.requestBytesMax) } }]);
  const outcome = await new Promise<Outcome>((resolve) => generic.transact?.call(m.generic, { opsJson }, { deadline: Date.now() + callTimeoutMs }, statusOrReply(resolve, txnReply)));
  t.match(outcome, { kind: 'status', code: grpc.status.RESOURCE_EXHAUSTED, details: /larger than max/ }, 'refused before it is decoded');
  t.same((await m.client.list('Logical_Switch')).rows, [], 'nothing was written, and the member still serves');
});

t.test('deeply nested JSON in a row value', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[0] as Member;
  const deep = '['.repeat(5000) + ']'.repeat(5000);
  const generic = m.generic as unknown as Record<string, (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void>;
  const outcome = await new Promise<Outcome>((resolve) =>
    generic.transact?.call(m.generic, { opsJson: `[{"op":"insert","table":"Logical_Switch","row":{"name":${deep}}}]` }, { deadline: Date.now() + todoCallMs }, statusOrReply(resolve, txnReply)),
  );
  t.ok(outcome.kind === 'reply' ? outcome.failed : outcome.code === grpc.status.INVALID_ARGUMENT, `refused as bad input, not an internal error: ${JSON.stringify(outcome).slice(0, 200)}`);
});

t.test('a watch from a revision the cluster has not reached', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[0] as Member;
  const stream = m.client.watch(['Logical_Switch'], 1_000_000);
  const first = new Promise<string>((resolve) => {
    stream.on('data', (e: { progress: boolean; changes: unknown[] }) => resolve(e.progress ? 'a progress notice' : `${e.changes.length} changes`));
    stream.on('error', (err: grpc.ServiceError) => resolve(`status ${grpc.status[err.code]}`));
    setTimeout(() => resolve('nothing'), todoCallMs).unref();
  });
  await m.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'after' } }]);
  const got = await first;
  stream.cancel();
  t.match(got, /^status (OUT_OF_RANGE|INVALID_ARGUMENT)$/, `refused clearly, got ${got}`);
});

t.test('a List whose where_json is null', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[0] as Member;
  const generic = m.generic as unknown as Record<string, (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void>;
  const outcome = await new Promise<Outcome>((resolve) =>
    generic.list?.call(m.generic, { table: 'Logical_Switch', whereJson: 'null', columns: [], consistency: 'LINEARIZABLE', db: '' }, { deadline: Date.now() + todoCallMs }, statusOrReply(resolve, () => ({ kind: 'reply', failed: false, results: 'rows' }))),
  );
  t.match(outcome, { kind: 'status', code: grpc.status.INVALID_ARGUMENT });
});
