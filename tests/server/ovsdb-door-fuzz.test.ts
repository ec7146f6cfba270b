// Goal: no frame, however malformed or hostile, crashes or hangs the OVSDB door, goes unanswered
// or changes the NB. Method: 4,000 seeded random frames (OVNTS_LONG: 100,000) in sessions over
// real TCP to doors on a follower and the leader of an in-process three-member cluster; each
// request must get a JSON-RPC error (or its echo) and each undecodable stream a closed
// connection; afterwards a fresh client is served and every replica's NB is byte-identical.
import { randomInt } from 'node:crypto';
import net from 'node:net';
import t from 'tap';
import { dumpDatabaseJson } from '../../ovsdb/index.js';
import { JsonValueSplitter } from '../../server/json-stream.js';
import type { OvsdbDoor } from '../../server/ovsdb-door.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import type { CentralCluster } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { Rng } from '../helpers/seeded-rng.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const framesN = Number(process.env.OVNTS_FRAMES ?? (process.env.OVNTS_LONG ? 100_000 : 4_000));
const seed = Number(process.env.OVNTS_SEED ?? randomInt(2 ** 31));
/** Replays one session of a seed alone (OVNTS_SESSION=i), as a failure report names it. */
const onlySession = process.env.OVNTS_SESSION === undefined ? undefined : Number(process.env.OVNTS_SESSION);
/** Sessions (connections) running at once. */
const sessionsInFlight = 4;
/** The longest a session may wait for its replies or for the server to close it: past it, a hang. */
const sessionWaitMs = 30_000;
const problemsShownMax = 10;
/** Small door limits, so the fuzzer reaches them cheaply. */
const messageBytesMax = 256 * 1024;
const messageDepthMax = 1000;
const requestsInFlightMax = 16;

const NB = 'OVN_Northbound';

// ---- Frames --------------------------------------------------------------------------------

/** What a frame must get: an error reply, any reply, its own params echoed, or no reply at all. */
type Expect = 'error' | 'reply' | 'echo' | 'none';

interface Frame {
  readonly what: string;
  readonly bytes: Buffer;
  readonly expect: Expect;
  /** JSON of the request id, for matching the reply (absent when no reply is expected). */
  readonly idKey?: string;
  /** For 'echo': the params as the server decodes the frame. */
  readonly echoed?: unknown;
}

/** How a session ends: the server must close it ('close'), we half-close after it ('end'), or we cut it ('cut'). */
interface Tail {
  readonly what: string;
  readonly bytes: Buffer;
  readonly kind: 'close' | 'end' | 'cut';
}

interface Session {
  readonly door: number;
  readonly frames: readonly Frame[];
  readonly tail: Tail | undefined;
  /** Bytes per write (the stream is cut into pieces of at most this many). */
  readonly chunkBytesMax: number;
}

interface Context {
  readonly switchName: string;
  readonly portName: string;
  readonly switchUuid: string;
}

function ident(rng: Rng, lengthMax = 10): string {
  const chars = 'abcdefghijklmnopqrstuvwxyz_0123456789';
  let s = rng.pick([...'abcdefghijklmnopqrstuvwxyz']);
  for (let i = rng.int(0, lengthMax); i > 0; i--) s += rng.pick([...chars]);
  return s;
}

/** A name no NB table, column, op, method, function or mutator has. */
const unknownName = (rng: Rng): string => `zz${ident(rng)}`;

/** Invalid UTF-8: lone continuation bytes, overlongs, surrogates, truncated sequences. */
const invalidUtf8 = [[0xff], [0xfe], [0x80], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc3], [0xe2, 0x82]];

/** A random JSON value of bounded size; strings may hold any BMP character. */
function randomJson(rng: Rng, depth = 0): unknown {
  const kind = rng.int(0, depth > 3 ? 4 : 6);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e300, rng.int(-1e9, 1e9)]);
    case 3:
    case 4: {
      let s = '';
      for (let i = rng.int(0, 12); i > 0; i--) s += String.fromCharCode(rng.chance(0.8) ? rng.int(0x20, 0x7e) : rng.int(0, 0xd7ff));
      return s;
    }
    case 5:
      return Array.from({ length: rng.int(0, 4) }, () => randomJson(rng, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: rng.int(0, 4) }, () => [ident(rng), randomJson(rng, depth + 1)]));
  }
}

/**
 * A request's text with invalid UTF-8 spliced into one of the string literals of its params
 * (not the method or the id, so that the reply can still be matched).
 */
function spliceBadUtf8(rng: Rng, text: string): Buffer {
  const from = text.indexOf('"params":') + '"params":'.length;
  const to = text.lastIndexOf(',"id":');
  // Positions just after an opening quote: the bytes land inside a string.
  const inside: number[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      if (i > from && i < to) inside.push(i + 1);
    }
  }
  if (inside.length === 0) return Buffer.from(text);
  const at = rng.pick(inside);
  return Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(rng.pick(invalidUtf8)), Buffer.from(text.slice(at))]);
}

/** A valid insert of a root row; it must not survive the bad operation beside it. */
const validInsert = (rng: Rng): unknown => ({ op: 'insert', table: 'Logical_Switch', row: { name: `fresh-${ident(rng)}` } });

function around(rng: Rng, bad: unknown): unknown[] {
  const before = Array.from({ length: rng.int(0, 2) }, () => validInsert(rng));
  const after = Array.from({ length: rng.int(0, 2) }, () => validInsert(rng));
  return [...before, bad, ...after];
}

/** Operations each of which makes its transaction fail, at the door or at apply. */
function badOps(rng: Rng, ctx: Context): unknown[] {
  const col = unknownName(rng);
  const choices: (() => unknown[])[] = [
    // Unknown table, column, op.
    () => around(rng, { op: rng.pick(['insert', 'select', 'delete', 'update']), table: unknownName(rng), row: {}, where: [] }),
    () => around(rng, { op: 'insert', table: 'Logical_Switch', row: { [col]: 1 } }),
    () => around(rng, { op: 'select', table: 'Logical_Switch', where: [[col, '==', 1]] }),
    () => around(rng, { op: 'update', table: 'Logical_Switch', where: [], row: { [col]: 'x' } }),
    () => around(rng, { op: rng.pick([unknownName(rng), 'INSERT', '', 'transact']), table: 'Logical_Switch', row: {}, where: [] }),
    // Operations of the wrong shape.
    () => around(rng, rng.pick<unknown>([1, 'insert', null, [], { table: 'Logical_Switch', row: {} }, { op: 5 }, { op: 'insert', row: {} }, { op: 'insert', table: 'Logical_Switch', row: [] }, { op: 'select', table: 'Logical_Switch', where: {} }, { op: 'mutate', table: 'Logical_Switch', where: [], mutations: {} }, { op: 'delete', table: 'Logical_Switch', where: [['name', '==']] }, { op: 'comment', comment: 5 }])),
    // Wrong types.
    () => around(rng, rng.pick<unknown>([
      { op: 'insert', table: 'Logical_Switch', row: { name: rng.pick<unknown>([5, true, ['set', [1]], { a: 1 }, null]) } },
      { op: 'insert', table: 'Logical_Switch', row: { external_ids: rng.pick<unknown>(['x', ['map', 'x'], ['map', [[1, 2]]], ['set', ['x']]]) } },
      { op: 'insert', table: 'Logical_Switch_Port', row: { name: 'p', tag: rng.pick<unknown>(['x', 1.5, ['set', [1, 2]]]) } },
      { op: 'insert', table: 'ACL', row: { priority: rng.pick([-1, 32768, 2 ** 53]), direction: 'to-lport', match: '1', action: 'allow' } },
      { op: 'insert', table: 'ACL', row: { direction: rng.pick(['sideways', '']), priority: 1, match: '1', action: 'allow' } },
      { op: 'mutate', table: 'Logical_Switch_Port', where: [], mutations: [rng.pick<unknown>([['tag', unknownName(rng), 1], ['name', '+=', 'x'], ['tag', '+=', 'x'], ['_uuid', 'insert', ['set', []]]])] },
      { op: 'select', table: 'Logical_Switch', where: [['name', rng.pick([unknownName(rng), 'like', '===']), 'x']] },
    ])),
    // Bad UUIDs.
    () => around(rng, rng.pick<unknown>([
      { op: 'select', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', rng.pick(['nope', '', '1234', ctx.switchUuid.toUpperCase() + 'x'])]]] },
      { op: 'insert', table: 'Logical_Switch', row: { ports: ['uuid', rng.pick(['not-a-uuid', 'zz', '0'])] } },
      { op: 'insert', table: 'Logical_Switch', row: { ports: ['set', [['uuid', rng.uuid()]]] } },
      { op: 'update', table: 'Logical_Switch', where: [['name', '==', ctx.switchName]], row: { ports: ['set', [['uuid', rng.uuid()]]] } },
      { op: 'insert', table: 'Logical_Switch', uuid: rng.pick(['x', 5]), row: {} },
    ])),
    // Named-UUID misuse. (A where clause may name a uuid-name nobody defines: ovsdb-server
    // accepts that, matching no row, so it is not here.)
    () => around(rng, rng.pick<unknown>([
      { op: 'insert', table: 'Logical_Switch', row: { ports: ['named-uuid', unknownName(rng)] } },
      { op: 'insert', table: 'Logical_Switch', 'uuid-name': rng.pick<unknown>([5, '9bad', '', 'has space']), row: {} },
      { op: 'insert', table: 'Logical_Switch', row: { ports: ['named-uuid', 5] } },
    ])),
    () => [
      { op: 'insert', table: 'Logical_Switch', 'uuid-name': 'dup', row: { name: 'a' } },
      { op: 'insert', table: 'Logical_Switch', 'uuid-name': 'dup', row: { name: 'b' } },
    ],
    // Failures at apply, after the log.
    () => around(rng, rng.pick<unknown>([
      { op: 'abort' },
      { op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]], mutations: [['tag', '*=', 10_000]] },
      { op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]], mutations: [['tag', rng.pick(['/=', '%=']), 0]] },
      { op: 'delete', table: 'Logical_Switch_Port', where: [['name', '==', ctx.portName]] },
      { op: 'wait', table: 'Logical_Switch', where: [['name', '==', ctx.switchName]], columns: ['name'], until: '!=', rows: [{ name: ctx.switchName }], timeout: 0 },
      { op: 'wait', table: 'Logical_Switch', where: [['name', '==', ctx.switchName]], columns: ['name'], until: '==', rows: [], timeout: rng.int(0, 50) },
    ])),
    // Locks that this connection does not hold.
    () => around(rng, { op: 'assert', lock: rng.pick<unknown>([ident(rng), 5, undefined]) }),
  ];
  return rng.pick(choices)();
}

/** Monitor requests of a bad shape: each must get an error. */
function badMonitor(rng: Rng): { method: string; params: unknown[] } {
  const id = rng.pick<unknown>([ident(rng), 5, null, ['a'], { a: 1 }]);
  const method = rng.pick(['monitor', 'monitor_cond', 'monitor_cond_since']);
  const requests = rng.pick<unknown>([
    5, 'x', null, [], { [unknownName(rng)]: {} },
    { Logical_Switch: { columns: rng.pick<unknown>([5, 'name', [5], ['nope']]) } },
    { Logical_Switch: { select: rng.pick<unknown>([5, { insert: 1 }, { modify: 'yes' }]) } },
    { Logical_Switch: [] },
    { Logical_Switch: [5] },
    { Logical_Switch: [{ where: rng.pick<unknown>([5, [[]], [['name']], [['nope', '==', 'x']], [['name', 'like', 'x']], [['name', '==', 5]]]) }] },
  ]);
  return rng.pick([
    { method, params: [] },
    { method, params: [rng.pick<unknown>([unknownName(rng), 5, null])] },
    { method, params: [NB, id, requests] },
    { method, params: [rng.pick([unknownName(rng), 'ovn_northbound']), id, { Logical_Switch: {} }] },
    { method: 'monitor_cond_change', params: rng.pick<unknown[]>([[], [unknownName(rng), 'x', {}], [null, null, 5]]) },
    { method: 'monitor_cancel', params: rng.pick<unknown[]>([[], [unknownName(rng)], [5]]) },
  ]);
}

/** One request or notification in a session; ids are unique per session. */
function makeFrame(rng: Rng, ctx: Context, nextId: () => number): Frame {
  const id = nextId();
  const idValue = rng.weighted<unknown>([[id, 8], [`s${id}`, 1], [[id], 1], [{ n: id }, 1]]);
  const idKey = JSON.stringify(idValue);
  const request = (what: string, method: unknown, params: unknown, expect: Expect, extra: Partial<Frame> = {}): Frame => ({
    what,
    bytes: Buffer.from(JSON.stringify({ method, params, id: idValue })),
    expect,
    idKey,
    ...extra,
  });
  const kind = rng.weighted<string>([
    ['echo', 10], ['echo with invalid UTF-8', 4], ['echo, deeply nested', 1], ['echo, big', 1], ['plain reads', 6],
    ['wrong shape', 8], ['unknown method', 4], ['notification', 3], ['reply-shaped', 2],
    ['transact: invalid ops', 30], ['transact: invalid ops with invalid UTF-8', 4], ['transact: bad params', 6], ['transact: reads', 3],
    ['monitor: bad shape', 12], ['monitor: valid', 3], ['locks', 10],
  ]);
  switch (kind) {
    case 'echo': {
      const params = Array.from({ length: rng.int(0, 3) }, () => randomJson(rng));
      return request(kind, 'echo', params, 'echo', { echoed: params });
    }
    case 'echo with invalid UTF-8': {
      const params = [`a${ident(rng)}`, { [ident(rng)]: `b${ident(rng)}` }];
      const bytes = spliceBadUtf8(rng, JSON.stringify({ method: 'echo', params, id: idValue }));
      // The server decodes bytes as UTF-8 with replacement characters, as Buffer.toString does.
      const echoed = (JSON.parse(bytes.toString('utf8')) as { params: unknown }).params;
      return { what: kind, bytes, expect: 'echo', idKey, echoed };
    }
    case 'echo, deeply nested': {
      // Within the depth limit (the request object and params count two levels): echoed back.
      const depth = rng.int(100, messageDepthMax - 2);
      const deep = rng.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      const text = `{"method":"echo","params":[${deep}],"id":${JSON.stringify(idValue)}}`;
      return { what: kind, bytes: Buffer.from(text), expect: 'echo', idKey, echoed: (JSON.parse(text) as { params: unknown }).params };
    }
    case 'echo, big': {
      const params = ['x'.repeat(rng.int(1000, messageBytesMax - 1000))];
      return request(kind, 'echo', params, 'echo', { echoed: params });
    }
    case 'plain reads': {
      const [method, params] = rng.pick<[string, unknown[]]>([['list_dbs', []], ['get_server_id', []], ['set_db_change_aware', [true]], ['cancel', [id]], ['get_schema', ['_Server']], ['list_dbs', [unknownName(rng)]]]);
      return request(kind, method, params, 'reply');
    }
    case 'wrong shape': {
      const shapes: unknown[] = [
        { method: 'echo', id: idValue },
        { method: 'echo', params: rng.pick<unknown>([5, 'x', {}, null, true]), id: idValue },
        { method: rng.pick<unknown>([5, null, [], {}, true]), params: [], id: idValue },
        { method: 'transact', params: { db: NB }, id: idValue },
        { method: 'get_schema', params: rng.pick<unknown[]>([[], [5], [unknownName(rng)], [null]]), id: idValue },
        { method: 'transact', params: [], id: idValue },
      ];
      return { what: kind, bytes: Buffer.from(JSON.stringify(rng.pick(shapes))), expect: 'error', idKey };
    }
    case 'unknown method':
      return request(kind, rng.pick([unknownName(rng), 'ECHO', '', 'transact ', 'convert', 'get_schemas']), [randomJson(rng)], 'error');
    case 'notification': {
      const method = rng.pick(['echo', 'transact', 'monitor', 'lock', 'cancel', unknownName(rng)]);
      const body = rng.chance(0.5) ? { method, params: [randomJson(rng)], id: null } : { method, params: [randomJson(rng)] };
      return { what: kind, bytes: Buffer.from(JSON.stringify(body)), expect: 'none' };
    }
    case 'reply-shaped':
      // A message without a method is a reply to the server; it is ignored.
      return { what: kind, bytes: Buffer.from(JSON.stringify({ id: idValue, result: randomJson(rng), error: rng.pick([null, 'x']) })), expect: 'none', idKey };
    case 'transact: invalid ops':
      return request(kind, 'transact', [NB, ...badOps(rng, ctx)], 'error');
    case 'transact: invalid ops with invalid UTF-8': {
      const ops = around(rng, { op: 'insert', table: rng.pick(['Logical_Switch', 'zzT']), row: { [rng.pick(['zzcol', 'name'])]: 'x' } });
      // Either the bad name is already unknown, or the invalid bytes land in a column or table name.
      const text = JSON.stringify({ method: 'transact', params: [NB, ...ops, { op: 'abort' }], id: idValue });
      return { what: kind, bytes: spliceBadUtf8(rng, text), expect: 'error', idKey };
    }
    case 'transact: bad params':
      return request(kind, 'transact', rng.pick<unknown[]>([[], [unknownName(rng)], [5, {}], ['_Server', { op: 'insert', table: 'Database', row: {} }], ['_Server', { op: 'delete', table: 'Database', where: [] }], [NB, 5], [NB, []]]), 'error');
    case 'transact: reads':
      return request(kind, 'transact', [NB, { op: 'select', table: rng.pick(['Logical_Switch', 'Logical_Switch_Port', 'NB_Global']), where: [], columns: ['_uuid'] }, { op: 'comment', comment: ident(rng) }], 'reply');
    case 'monitor: bad shape': {
      const { method, params } = badMonitor(rng);
      return request(kind, method, params, 'error');
    }
    case 'monitor: valid':
      return request(kind, rng.pick(['monitor', 'monitor_cond', 'monitor_cond_since']), [rng.pick([NB, '_Server']), `m${id}`, rng.pick<unknown>([{}, { Logical_Switch: { columns: ['name'] } }, { Database: {} }])], 'reply');
    case 'locks': {
      const method = rng.pick(['lock', 'steal', 'unlock']);
      const params = rng.chance(0.8) ? [rng.pick(['L0', 'L1', 'L2'])] : rng.pick<unknown[]>([[], [5], ['a', 'b'], [null]]);
      return request(kind, method, params, 'reply');
    }
    default:
      throw new Error(`no generator ${kind}`);
  }
}

/** A tail that must make the server close the connection, or that we end or cut ourselves. */
/**
 * A transact request with two aborts at its end. One corrupted byte can make an invalid
 * transaction valid (a duplicate uuid-name changed, the name of its bad op broken), and the
 * server then rightly commits it; with two aborts, any corruption of one still leaves the other,
 * so a corrupted frame that still parses never changes the NB. Other frames are unchanged.
 */
function withTwoAborts(bytes: Buffer): Buffer {
  let msg: unknown;
  try {
    msg = JSON.parse(bytes.toString('utf8'));
  } catch {
    return bytes;
  }
  if (!isRecord(msg) || msg['method'] !== 'transact' || !Array.isArray(msg['params'])) return bytes;
  return Buffer.from(JSON.stringify({ ...msg, params: [...msg['params'], { op: 'abort' }, { op: 'abort' }] }));
}

function makeTail(rng: Rng, frame: () => Frame): Tail {
  const kind = rng.weighted<string>([['malformed JSON', 4], ['not an object', 2], ['too large', 1], ['too deep', 1], ['random bytes', 3], ['corrupted frame', 3], ['cut mid-frame', 4]]);
  switch (kind) {
    case 'malformed JSON':
      return { what: kind, kind: 'close', bytes: Buffer.from(rng.pick(['{"method": "echo", "params": [}]', '[1,2,]', '{"a":1,}', "{'method':'echo'}", '{"method":"echo","params":[NaN],"id":1}', '{"id":01}', '{"a" "b"}', `{${ident(rng)}}`, '[tru]', '{"method":"echo","params":["\\x"],"id":1}'])) };
    case 'not an object':
      return { what: kind, kind: 'close', bytes: Buffer.from(rng.pick(['"a string"', '5', 'null', 'true', '[1,2]', '[]', '[{"method":"echo","params":[],"id":1}]', '}', ']'])) };
    case 'too large':
      return { what: kind, kind: 'close', bytes: Buffer.from(JSON.stringify({ method: 'echo', params: ['y'.repeat(messageBytesMax + rng.int(1, 10_000))], id: 1 })) };
    case 'too deep': {
      const depth = rng.int(messageDepthMax + 1, 100_000);
      return { what: kind, kind: 'close', bytes: Buffer.from(rng.chance(0.5) ? `{"method":"echo","params":${'['.repeat(depth)}${']'.repeat(depth)},"id":1}` : '['.repeat(depth)) };
    }
    case 'random bytes':
      return { what: kind, kind: 'end', bytes: Buffer.from(Array.from({ length: rng.int(1, 300) }, () => rng.int(0, 255))) };
    case 'corrupted frame': {
      const good = withTwoAborts(Buffer.from(frame().bytes));
      const at = rng.int(0, good.length - 1);
      const bytes = rng.pick([
        Buffer.concat([good.subarray(0, at), good.subarray(at + 1)]),
        Buffer.concat([good.subarray(0, at), Buffer.from([rng.int(0, 255)]), good.subarray(at)]),
        Buffer.from(good.map((b, i) => (i === at ? rng.int(0, 255) : b))),
      ]);
      return { what: kind, kind: 'end', bytes };
    }
    default: {
      const good = frame().bytes;
      return { what: kind, kind: 'cut', bytes: good.subarray(0, rng.int(1, Math.max(1, good.length - 1))) };
    }
  }
}

const tailIdBase = 1_000_000;

function makeSession(rng: Rng, ctx: Context, framesLeft: number): Session {
  let id = 0;
  const nextId = (): number => ++id;
  // Mostly short sessions; some with hundreds of outstanding requests (beyond requestsInFlightMax).
  const n = Math.min(framesLeft, rng.chance(0.05) ? rng.int(100, 600) : rng.int(1, 30));
  const frames = Array.from({ length: n }, () => makeFrame(rng, ctx, nextId));
  // A corrupted tail may still parse, with its id changed by a byte dropped, added or replaced:
  // its ids start at a million, so that it never answers for one of the frames before it.
  const tail = rng.chance(0.3) ? makeTail(rng, () => makeFrame(rng, ctx, () => tailIdBase + nextId())) : undefined;
  return { door: rng.int(0, 1), frames, tail, chunkBytesMax: rng.pick([1, 7, 64, 1500, 1 << 20]) };
}

// ---- Running and judging -------------------------------------------------------------------

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Undefined when the reply is what the frame must get; else why not. */
function judge(f: Frame, reply: Record<string, unknown> | undefined): string | undefined {
  if (f.expect === 'none') return reply === undefined ? undefined : `a reply to a message that needs none: ${JSON.stringify(reply).slice(0, 200)}`;
  if (reply === undefined) return 'no reply';
  const { result, error } = reply;
  if (!('result' in reply) || !('error' in reply)) return `a reply without result and error: ${JSON.stringify(reply).slice(0, 200)}`;
  if (f.expect === 'reply') return undefined;
  if (f.expect === 'echo') return error === null && JSON.stringify(result) === JSON.stringify(f.echoed) ? undefined : `echo came back different: ${JSON.stringify(reply).slice(0, 200)}`;
  // 'error': an error reply, or a transaction whose results hold an RFC 7047 error object.
  if (error !== null) return result === null ? undefined : `an error reply with a result: ${JSON.stringify(reply).slice(0, 200)}`;
  const failed = Array.isArray(result) && result.some((r) => isRecord(r) && typeof r['error'] === 'string' && r['error'].length > 0);
  return failed ? undefined : `accepted: ${JSON.stringify(result).slice(0, 300)}`;
}

interface SessionOutcome {
  readonly problems: string[];
  /** what → outcome → count */
  readonly tally: Map<string, number>;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });
}

async function runSession(port: number, s: Session, label: string): Promise<SessionOutcome> {
  const problems: string[] = [];
  const tally = new Map<string, number>();
  const count = (k: string): void => void tally.set(k, (tally.get(k) ?? 0) + 1);
  const socket = await connect(port);
  const splitter = new JsonValueSplitter(1 << 30, Infinity);
  const replies = new Map<string, Record<string, unknown>>();
  let closed = false;
  let wake: () => void = () => undefined;
  socket.on('error', () => undefined); // A reset by the server shows as 'close'.
  socket.on('close', () => {
    closed = true;
    wake();
  });
  socket.on('data', (chunk: Buffer) => {
    let messages: unknown[];
    try {
      messages = splitter.feed(chunk);
    } catch (err) {
      problems.push(`${label}: the server sent invalid JSON: ${(err as Error).message}`);
      socket.destroy();
      return;
    }
    for (const m of messages) {
      if (!isRecord(m)) {
        problems.push(`${label}: the server sent a non-object: ${JSON.stringify(m).slice(0, 100)}`);
        continue;
      }
      if (typeof m['method'] === 'string') {
        // The server's inactivity probe is answered; notifications (update, locked, stolen) are not.
        if (m['method'] === 'echo' && m['id'] !== null && m['id'] !== undefined) socket.write(JSON.stringify({ id: m['id'], result: m['params'], error: null }));
        continue;
      }
      const key = JSON.stringify(m['id'] ?? null);
      const first = replies.get(key);
      if (first !== undefined) {
        const frame = s.frames.find((f) => f.idKey === key);
        problems.push(`${label}: two replies for id ${key}: ${JSON.stringify(first).slice(0, 200)} and ${JSON.stringify(m).slice(0, 200)}\n    frame: ${frame?.bytes.toString('utf8').slice(0, 300) ?? '(none)'}`);
      }
      replies.set(key, m);
    }
    wake();
  });
  const waitFor = async (done: () => boolean): Promise<boolean> => {
    const deadline = Date.now() + sessionWaitMs;
    while (!done()) {
      if (Date.now() > deadline) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return true;
  };

  const stream = Buffer.concat([...s.frames.map((f) => f.bytes), s.tail?.bytes ?? Buffer.alloc(0)]);
  for (let at = 0; at < stream.length && !closed; at += s.chunkBytesMax) socket.write(stream.subarray(at, at + s.chunkBytesMax));
  const expected = s.frames.filter((f) => f.expect !== 'none');
  switch (s.tail?.kind) {
    case undefined: {
      if (!(await waitFor(() => closed || expected.every((f) => replies.has(f.idKey as string))))) {
        problems.push(`${label}: hang: ${expected.filter((f) => !replies.has(f.idKey as string)).length} of ${expected.length} requests unanswered after ${sessionWaitMs} ms`);
      }
      if (closed) problems.push(`${label}: the server closed a connection that sent only well-formed frames`);
      for (const f of s.frames) {
        const why = judge(f, f.idKey === undefined ? undefined : replies.get(f.idKey));
        count(`${f.what} → ${why === undefined ? 'ok' : 'BAD'}`);
        if (why !== undefined) problems.push(`${label}: ${f.what}: ${why}\n    frame: ${f.bytes.toString('utf8').slice(0, 300)}`);
      }
      socket.end();
      break;
    }
    case 'close':
    case 'end': {
      if (s.tail.kind === 'end') socket.end();
      if (!(await waitFor(() => closed))) problems.push(`${label}: hang: the connection stayed open after ${s.tail.what}`);
      // Replies that did arrive before the close must still be right.
      for (const f of s.frames) {
        const reply = f.idKey === undefined ? undefined : replies.get(f.idKey);
        if (reply === undefined && f.expect !== 'none') continue;
        const why = judge(f, reply);
        count(`${f.what} → ${why === undefined ? 'ok' : 'BAD'}`);
        if (why !== undefined) problems.push(`${label}: ${f.what}: ${why}`);
      }
      count(`tail: ${s.tail.what} → ${s.tail.kind === 'close' ? 'closed by the server' : 'closed'}`);
      break;
    }
    case 'cut':
      count(`tail: ${s.tail.what} → cut`);
      break;
  }
  socket.destroy();
  await waitFor(() => closed);
  return { problems, tally };
}

/** Every replica has applied everything committed, then its whole NB as JSON. */
async function dumps(cluster: CentralCluster): Promise<string[]> {
  for (const m of cluster.members) await m.central.list('NB_Global', [], undefined, 'linearizable');
  return cluster.members.map((m) => JSON.stringify(dumpDatabaseJson(m.central.sm.nb)));
}

/** Which rows differ between two dumps, briefly: the table and the row's name or uuid. */
function dumpDifference(a: string, b: string): string {
  const x = JSON.parse(a) as Record<string, Record<string, Record<string, unknown>>>;
  const y = JSON.parse(b) as Record<string, Record<string, Record<string, unknown>>>;
  const out: string[] = [];
  for (const table of new Set([...Object.keys(x), ...Object.keys(y)])) {
    const rx = x[table] ?? {};
    const ry = y[table] ?? {};
    for (const uuid of new Set([...Object.keys(rx), ...Object.keys(ry)])) {
      if (JSON.stringify(rx[uuid]) === JSON.stringify(ry[uuid])) continue;
      const label = `${table} ${JSON.stringify((ry[uuid] ?? rx[uuid])?.['name'] ?? uuid)}`;
      out.push(rx[uuid] === undefined ? `+${label}` : ry[uuid] === undefined ? `-${label}` : `~${label}`);
    }
  }
  return `${out.length} rows differ: ${out.slice(0, 10).join(', ')}`;
}

t.test(`${framesN} random hostile frames to two doors: errors or closed connections, servers up, NB unchanged (seed ${seed})`, async (t) => {
  t.comment(`seed=${seed} (replay: OVNTS_SEED=${seed} npm run test:one -- tests/server/ovsdb-door-fuzz.test.ts; one failing session alone: add OVNTS_SESSION=<its #>)`);
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader');
  const follower = cluster.members.find((m) => m.central.node.status().role !== 'leader');
  if (leader === undefined || follower === undefined) throw new Error('no leader and follower');
  const limits = { messageBytesMax, messageDepthMax, requestsInFlightMax, inactivityProbeMs: 60_000 };
  const doors: OvsdbDoor[] = [await startOvsdbDoor({ central: follower.central, listen: { host: '127.0.0.1', port: 0 }, limits }), await startOvsdbDoor({ central: leader.central, listen: { host: '127.0.0.1', port: 0 }, limits })];
  t.teardown(async () => {
    for (const d of doors) await d.close();
    await cluster.stop();
  });
  const ports = doors.map((d) => (d.address as { port: number }).port);

  // Real rows, so that updates, mutations, deletes and waits have something to break.
  const seeded = await leader.central.transact([
    { op: 'insert', table: 'NB_Global', row: {} },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'keep-p0', tag: 100, addresses: ['set', ['00:00:00:00:00:01 10.0.0.1']] } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'keep', ports: ['set', [['named-uuid', 'p']]], external_ids: ['map', [['k', 'v']]] } },
  ]);
  t.equal(seeded.failed, false, 'seed rows');
  const switchUuid = (seeded.results[2] as { uuid: [string, string] }).uuid[1];
  const ctx: Context = { switchName: 'keep', portName: 'keep-p0', switchUuid };
  const before = await dumps(cluster);
  t.equal(new Set(before).size, 1, 'the replicas agree before');

  const problems: string[] = [];
  let problemsN = 0;
  const tally = new Map<string, number>();
  let framesLeft = framesN;
  let sessionsN = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: sessionsInFlight }, async () => {
      while (framesLeft > 0) {
        const i = onlySession ?? sessionsN;
        sessionsN++;
        // One generator per session: a failing session replays alone with the same seed.
        const rng = new Rng((seed + Math.imul(i, 0x9e3779b1)) >>> 0);
        const s = makeSession(rng, ctx, onlySession === undefined ? framesLeft : framesN);
        framesLeft = onlySession === undefined ? framesLeft - s.frames.length - (s.tail ? 1 : 0) : 0;
        const out = await runSession(ports[s.door] as number, s, `session #${i} (door ${s.door === 0 ? 'follower' : 'leader'})`);
        for (const [k, n] of out.tally) tally.set(k, (tally.get(k) ?? 0) + n);
        problemsN += out.problems.length;
        for (const p of out.problems) if (problems.length < problemsShownMax) problems.push(p);
      }
    }),
  );
  t.comment(`${framesN} frames in ${sessionsN} sessions, ${Date.now() - started} ms; outcomes:\n${[...tally].sort().map(([k, n]) => `  ${String(n).padStart(6)}  ${k}`).join('\n')}`);
  t.same(problems, [], `every frame got what it must (${problemsN} did not; the first ${problemsShownMax} shown; seed ${seed})`);

  for (const [i, port] of ports.entries()) {
    const fresh = await JsonRpcClient.connect({ host: '127.0.0.1', port }, { requestTimeoutMs: 10_000 });
    t.same(await fresh.request('list_dbs', []), [NB, '_Server'], `door ${i}: a fresh client's list_dbs`);
    t.same(await fresh.request('echo', ['alive', i]), ['alive', i], `door ${i}: a fresh client's echo`);
    await fresh.close();
  }
  const after = await dumps(cluster);
  for (const [i, d] of after.entries()) t.ok(d === before[i], `member ${i + 1}: the NB is byte-identical (seed ${seed})${d === before[i] ? '' : `: ${dumpDifference(before[i] as string, d)}`}`);
});

// Defects this fuzzer found, now fixed; each stays as a regression test.
t.test('nesting beyond messageDepthMax closes the connection instead of crashing the process', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t), { size: 1 });
  const central = (cluster.members[0] as CentralCluster['members'][number]).central;
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await cluster.stop();
  });
  const port = (door.address as { port: number }).port;
  // Before the fix these two frames raised RangeError in JSON.stringify (the echo reply, the
  // monitor id as a map key) outside any handler: an unhandled rejection ends the process.
  const depth = 10_000;
  const deep = '['.repeat(depth) + ']'.repeat(depth);
  for (const frame of [`{"method":"echo","params":[${deep}],"id":1}`, `{"method":"monitor","params":["${NB}",${deep},{}],"id":1}`]) {
    const s = await connect(port);
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    await new Promise<void>((resolve) => {
      s.on('close', () => resolve());
      s.write(frame);
    });
    t.equal(got, '', `${frame.slice(0, 20)}...: closed without a reply, as ovsdb-server does`);
  }
  // At the limit (the request object and params are two levels), the frame is served.
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port });
  t.teardown(() => c.close());
  const atLimit = JSON.parse('['.repeat(998) + ']'.repeat(998)) as unknown;
  t.same(await c.request('echo', [atLimit]), [atLimit], 'depth 1000 in all is echoed');
});

t.test('a write forwarded to a leader that goes away gets an error reply, not a crash', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader');
  const follower = cluster.members.find((m) => m.central.node.status().role !== 'leader');
  if (leader === undefined || follower === undefined) throw new Error('no leader and follower');
  const door = await startOvsdbDoor({ central: follower.central, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await cluster.stop();
  });
  // Know when the forwarded write reached the leader (it then blocks on its "wait").
  let arrived: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const transact = leader.central.transact.bind(leader.central);
  leader.central.transact = (ops) => {
    arrived();
    return transact(ops);
  };
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: (door.address as { port: number }).port });
  t.teardown(() => c.close());
  const reply = c.request('transact', [NB, { op: 'wait', table: 'Logical_Switch', where: [], columns: ['name'], until: '==', rows: [{ name: 'never' }], timeout: 3000 }]).catch((e: unknown) => e);
  await reached;
  // Before the fix, the forwarding call's gRPC error reached toRpcError, which rethrew it from
  // a promise handler: an unhandled rejection, which ends a central process.
  leader.server.forceShutdown();
  t.match(await reply, { error: { error: 'unavailable', details: /forwarded transaction/ } }, 'an "unavailable" error reply');
  t.same(await c.request('echo', ['alive']), ['alive'], 'the door still serves');
});
