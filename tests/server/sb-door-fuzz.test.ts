// Goal: no byte stream sent to the OVN_Southbound door, however mangled, crashes or hangs it or
// changes the SB. Method: 5,000 frames (OVNTS_LONG: 100,000), each a request the SB door
// refuses or only reads (writes to tables northd derives, malformed Chassis and Port_Binding
// writes, selects, monitors, schema and lock requests), half of them with 1–3 byte mutations (a byte
// changed, dropped, doubled or inserted, a cut, a splice of invalid UTF-8), sent in sessions of
// 1–20 frames over real TCP to the door of a follower, cut into random pieces and half-closed.
// Each session must end with the server closing the connection within the deadline; afterwards
// a fresh client is served and the SB view and the chassis tables are byte-identical.
// OVNTS_SEED replays a run.
import { randomInt } from 'node:crypto';
import net from 'node:net';
import t from 'tap';
import { JsonValueSplitter } from '../../server/json-stream.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { startSbDoorFixture } from '../helpers/sb-door-fixture.js';
import { Rng } from '../helpers/seeded-rng.js';

const SB = 'OVN_Southbound';
const framesN = Number(process.env.OVNTS_FRAMES ?? (process.env.OVNTS_LONG ? 100_000 : 5_000));
const seed = Number(process.env.OVNTS_SEED ?? randomInt(2 ** 31));
/** Sessions (connections) open at once. */
const sessionsInFlight = 4;
/** The longest the server may take to close a session we half-closed: past it, a hang. */
const sessionWaitMs = 30_000;
/** Small door limits, so mutated lengths and nesting reach them cheaply. */
const limits = { messageBytesMax: 64 * 1024, requestsInFlightMax: 16 };

const derivedTables = ['Logical_Flow', 'Logical_DP_Group', 'Datapath_Binding', 'Port_Binding', 'Multicast_Group', 'SB_Global', 'Address_Set', 'Port_Group', 'DHCP_Options'];
const readTables = [...derivedTables, 'Chassis', 'Chassis_Private', 'Encap', 'MAC_Binding', 'FDB'];
const garbage: unknown[] = [null, 5, 'x', [], {}, [[]], ['uuid', 'not-a-uuid'], ['named-uuid', 'ghost'], ['set', [1, 'a']], ['map', 7]];

/** A request the SB door must refuse or only read; `pb` is a Port_Binding UUID. */
function baseRequest(rng: Rng, pb: string, id: number): unknown {
  const table = rng.pick(derivedTables);
  switch (rng.int(0, 9)) {
    case 0:
      return { method: 'transact', params: [SB, { op: 'insert', table, row: { [rng.pick(['name', 'tunnel_key', 'match', 'datapaths'])]: rng.pick(garbage) } }], id };
    case 1:
      return { method: 'transact', params: [SB, { op: 'delete', table, where: [['_uuid', '==', ['uuid', pb]]] }], id };
    case 2:
      return { method: 'transact', params: [SB, { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', pb]]], row: { [rng.pick(['tunnel_key', 'logical_port', 'mac', 'datapath'])]: rng.pick(garbage) } }], id };
    case 3:
      return { method: 'transact', params: [SB, { op: 'mutate', table, where: [], mutations: [['tunnel_key', '+=', 1]] }], id };
    case 4:
      return { method: 'transact', params: [SB, { op: 'insert', table: 'Chassis', row: { name: 'x', encaps: rng.pick<unknown>([['set', []], ['named-uuid', 'ghost']]) } }], id };
    case 5:
      return { method: 'transact', params: [SB, { op: 'select', table: rng.pick(readTables), where: rng.pick<unknown>([[], [['_uuid', '!=', ['uuid', pb]]], [['tunnel_key', '<', 3]]]) }], id };
    case 6:
      return { method: rng.pick(['monitor', 'monitor_cond']), params: [SB, `m${id}`, { [rng.pick(readTables)]: [{ columns: [] }] }], id };
    case 7:
      return { method: 'monitor_cond_since', params: [SB, `m${id}`, { Port_Binding: [{ where: [['logical_port', '==', 'vm1']] }] }, '00000000-0000-0000-0000-000000000000'], id };
    case 8:
      return { method: rng.pick(['get_schema', 'list_dbs', 'echo', 'lock', 'unlock', 'get_server_id', 'set_db_change_aware']), params: rng.pick<unknown[]>([[SB], [], ['l'], [true]]), id };
    default:
      return { method: 'transact', params: ['_Server', { op: 'select', table: 'Database', where: [] }], id };
  }
}

const invalidUtf8 = [[0xff], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]];
/** Bytes that change a JSON text's structure most often. */
const structural = [...'{}[]",:\\0123456789-.etfn '].map((c) => c.charCodeAt(0));

/** `bytes` with one random mutation. */
function mutate(rng: Rng, bytes: Buffer): Buffer {
  if (bytes.length === 0) return bytes;
  const at = rng.int(0, bytes.length - 1);
  const byte = (): number => (rng.chance(0.5) ? rng.pick(structural) : rng.int(0, 255));
  switch (rng.int(0, 5)) {
    case 0: {
      const out = Buffer.from(bytes);
      out[at] = byte();
      return out;
    }
    case 1:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
    case 2:
      return Buffer.concat([bytes.subarray(0, at + 1), bytes.subarray(at)]);
    case 3:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([byte()]), bytes.subarray(at)]);
    case 4:
      return bytes.subarray(0, at);
    default:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(rng.pick(invalidUtf8)), bytes.subarray(at)]);
  }
}

interface Session {
  readonly bytes: Buffer;
  readonly chunkMax: number;
  /** Frames left intact: each must get its reply (none mangled). */
  readonly clean: number | undefined;
}

function makeSessions(rng: Rng, pb: string): Session[] {
  const out: Session[] = [];
  let id = 1;
  for (let left = framesN; left > 0;) {
    const n = Math.min(left, rng.int(1, 20));
    left -= n;
    // Half the sessions are hostile requests only, each of which must be answered; in the
    // other half every frame may be mangled, and the first undecodable one ends the session.
    const clean = rng.chance(0.5);
    const frames: Buffer[] = [];
    for (let i = 0; i < n; i++) {
      let b: Buffer = Buffer.from(JSON.stringify(baseRequest(rng, pb, id++)));
      if (!clean) for (let m = rng.int(0, 3); m > 0; m--) b = mutate(rng, b);
      frames.push(b);
    }
    out.push({ bytes: Buffer.concat(frames), chunkMax: rng.pick([1, 7, 64, 4096, 1 << 20]), clean: clean ? n : undefined });
  }
  return out;
}

/** What the sessions saw. */
const seen = { replies: 0, errors: 0, unanswered: 0 };

/** Sends a session and half-closes; resolves with whether the server closed it in time. */
async function runSession(port: number, s: Session): Promise<'closed' | 'hung'> {
  const socket = net.connect(port, '127.0.0.1');
  const splitter = new JsonValueSplitter(1 << 30, Infinity);
  const answered = new Set<string>();
  socket.on('error', () => undefined); // A reset by the server shows as 'close'.
  socket.on('data', (d: Buffer) => {
    for (const m of splitter.feed(d) as Record<string, unknown>[]) {
      if (typeof m['method'] === 'string') continue; // update notifications, the server's echo
      answered.add(JSON.stringify(m['id']));
      seen.replies++;
      const result = m['result'];
      if ((m['error'] ?? null) !== null || (Array.isArray(result) && result.some((r) => typeof r === 'object' && r !== null && 'error' in r))) seen.errors++;
    }
  });
  const closed = new Promise<'closed'>((resolve) => socket.on('close', () => resolve('closed')));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  for (let at = 0; at < s.bytes.length && !socket.destroyed; at += s.chunkMax) socket.write(s.bytes.subarray(at, at + s.chunkMax));
  // An intact session waits for its replies before half-closing (the door, like ovsdb-server,
  // ends a session at the client's end of stream).
  const deadline = Date.now() + sessionWaitMs;
  while (s.clean !== undefined && answered.size < s.clean && !socket.destroyed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  if (!socket.destroyed) socket.end();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), sessionWaitMs)));
  const outcome = await Promise.race([closed, hung]);
  clearTimeout(timer);
  socket.destroy();
  if (s.clean !== undefined && answered.size !== s.clean) seen.unanswered += s.clean - answered.size;
  return outcome;
}

t.test(`${framesN} mutated frames to the OVN_Southbound door change nothing (seed ${seed})`, async (t) => {
  const fx = await startSbDoorFixture(t, limits);
  const { port } = fx.address;
  const before = fx.snapshot();
  const pb = fx.pbUuid;

  const sessions = makeSessions(new Rng(seed), pb);
  const hung: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < sessions.length) {
      const i = next++;
      if ((await runSession(port, sessions[i] as Session)) === 'hung') hung.push(i);
    }
  };
  await Promise.all(Array.from({ length: sessionsInFlight }, worker));
  t.same(hung, [], `every one of ${sessions.length} sessions was closed by the server after we half-closed it`);
  t.equal(seen.unanswered, 0, `every intact hostile request was answered (${seen.replies} replies, ${seen.errors} of them errors)`);
  t.ok(seen.errors > framesN / 10, 'the writes among them were refused');

  const fresh = await JsonRpcClient.connect(fx.address);
  t.same(await fresh.request('list_dbs', []), [SB, '_Server'], 'the door still serves');
  await fresh.close();
  await fx.caughtUp();
  t.equal(fx.snapshot(), before, 'the SB view and the chassis tables are unchanged');
});
