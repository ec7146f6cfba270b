// The floor under a serial replicated commit on this machine, with no Raft, no gRPC and no
// LevelDB: a "leader" process appends each 100-byte command to a file and fdatasyncs it while
// it sends the command over loopback TCP to two "follower" processes, which each append,
// fdatasync and answer one byte. A commit is done once the leader's own write and one
// follower's answer are both done (a majority of three on disk), and the next one starts.
//
// Run a second way, the leader does not wait for its own write (it still makes one per
// command): what a leader allowed to commit on its followers' disks alone (Raft thesis
// §10.2.1) could reach. All three processes share this machine's one disk, as the members of
// a local cluster do: their fdatasyncs queue on the same journal.
import { fork } from 'node:child_process';
import { closeSync, fdatasync, fdatasyncSync, mkdtempSync, openSync, rmSync, write, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, median, percentile } from './report.js';

export interface CommitFloor {
  readonly perS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** A floor measured twice: the leader answering once its own write and one follower's are done,
 *  and once one follower's is (not waiting on its own: less than Raft needs). */
export interface FloorPair {
  readonly leaderWaits: CommitFloor;
  readonly followersOnly: CommitFloor;
}

/** The size of each command (a small NB transaction's order of size). */
export const commandBytes = 100;
const self = fileURLToPath(import.meta.url);

/** A follower: appends and fdatasyncs what it receives, then answers for each command now on disk. */
function follower(dir: string): void {
  const fd = openSync(join(dir, `follower-${process.pid}`), 'w');
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    // One answer byte per whole command on disk (TCP may join or split commands).
    let received = 0;
    let answered = 0;
    s.on('data', (d) => {
      writeSync(fd, d);
      fdatasyncSync(fd);
      received += d.length;
      const whole = Math.floor(received / commandBytes);
      if (whole > answered) s.write(Buffer.alloc(whole - answered, 107));
      answered = whole;
    });
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as net.AddressInfo).port));
  process.on('disconnect', () => process.exit(0));
}

/** Appends `buf` to the file and fdatasyncs it, off the main thread (as a log writer does). */
export function appendAndSync(fd: number, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => write(fd, buf, (err) => (err ? reject(err) : fdatasync(fd, (e) => (e ? reject(e) : resolve())))));
}

/** Runs `n` serial commits each way; both followers are stopped before it returns. */
export async function measureCommitFloor(n: number): Promise<FloorPair> {
  const dir = mkdtempSync(join(tmpdir(), 'commit-floor-'));
  const kids = [fork(self, ['follower', dir]), fork(self, ['follower', dir])];
  try {
    const ports = await Promise.all(kids.map((k) => new Promise<number>((resolve) => k.once('message', (p) => resolve(p as number)))));
    const socks = await Promise.all(
      ports.map((p) => new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect(p, '127.0.0.1', () => resolve(s));
        s.setNoDelay(true);
        s.once('error', reject);
      })),
    );
    // Each follower answers its commands in order: command i is on its disk once it has answered i.
    const answered = socks.map(() => 0);
    let onAnswer: (() => void) | undefined;
    socks.forEach((s, k) => s.on('data', (d: Buffer) => {
      answered[k] = (answered[k] as number) + d.length;
      onAnswer?.();
    }));
    const fd = openSync(join(dir, 'leader'), 'w');
    const command = Buffer.alloc(commandBytes, 1);
    const run = async (leaderWaits: boolean): Promise<CommitFloor> => {
      const lat: number[] = [];
      let leaderWrites: Promise<void> = Promise.resolve();
      const base = answered.map((a) => a);
      const t0 = performance.now();
      for (let i = 1; i <= n; i++) {
        const started = performance.now();
        const onFollowerDisk = (): boolean => answered.some((a, k) => a - (base[k] as number) >= i);
        const first = new Promise<void>((resolve) => {
          onAnswer = () => {
            if (onFollowerDisk()) resolve();
          };
        });
        for (const s of socks) s.write(command);
        // One write at a time, in order, as a log's are.
        leaderWrites = leaderWrites.then(() => appendAndSync(fd, command));
        if (leaderWaits) await Promise.all([leaderWrites, first]);
        else await first;
        lat.push(performance.now() - started);
      }
      const wallS = (performance.now() - t0) / 1000;
      await leaderWrites;
      while (answered.some((a, k) => a - (base[k] as number) < n)) await new Promise<void>((resolve) => setTimeout(resolve, 1));
      return { perS: n / wallS, p50Ms: median(lat), p99Ms: percentile(lat, 99) };
    };
    await run(true); // warm-up
    const leaderWaits = await run(true);
    const followersOnly = await run(false);
    for (const s of socks) s.destroy();
    closeSync(fd);
    return { leaderWaits, followersOnly };
  } finally {
    for (const k of kids) k.disconnect();
    await Promise.all(kids.map((k) => (k.exitCode !== null ? undefined : new Promise((resolve) => k.once('exit', resolve)))));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A serial goal ("goal times the real OVN's serial rate") set beside the floor measured in the
 * same run, and beside the floor with ovnts's hops when given (grpc-commit-floor.ts): a table of
 * its rows and the key=value figures. A goal at or above the floor asks more of a whole
 * transaction (client RPC, Raft, database, projection) than the disk and the loopback give a
 * bare command; a goal at or above the second asks more than the transports alone give.
 */
export function serialGoalBesideFloor(
  floor: FloorPair,
  realSerialPerS: number | undefined,
  goal: number,
  transport?: { readonly floor: FloorPair; readonly what: string },
): { rows: string[][]; figures: Record<string, number | string> } {
  const goalPerS = realSerialPerS === undefined ? undefined : goal * realSerialPerS;
  const over = goalPerS === undefined ? undefined : goalPerS / floor.leaderWaits.perS;
  const overTransport = goalPerS === undefined || transport === undefined ? undefined : goalPerS / transport.floor.leaderWaits.perS;
  // The goal beside the faster of the two hops floors: what the transports give at best.
  const bestTransport = transport === undefined ? undefined : Math.max(transport.floor.leaderWaits.perS, transport.floor.followersOnly.perS);
  const overBestTransport = goalPerS === undefined || bestTransport === undefined ? undefined : goalPerS / bestTransport;
  const row = (what: string, f: CommitFloor): string[] => [what, fmt(f.perS), `${fmt(f.p50Ms, 2)} / ${fmt(f.p99Ms, 2)}`, ''];
  const rows = [
    ['figure', 'per s', 'p50 / p99 ms', ''],
    row('bare serial commit: 3 processes, raw loopback TCP, fdatasync, no Raft, no RPC, no database', floor.leaderWaits),
    row('  the same, the leader not waiting on its own write', floor.followersOnly),
  ];
  if (transport !== undefined) {
    rows.push(row(`the same with ovnts's hops (bench/lib/grpc-commit-floor.ts): ${transport.what}`, transport.floor.leaderWaits));
    rows.push(row('  the same, the leader not waiting on its own write', transport.floor.followersOnly));
  }
  const besides = [
    over === undefined ? '' : `${fmt(over, 2)}x the bare commit`,
    overTransport === undefined ? '' : `${fmt(overTransport, 2)}x ovnts's hops`,
    overBestTransport === undefined ? '' : `${fmt(overBestTransport, 2)}x the faster hops floor`,
  ].filter((x) => x !== '').join(', ');
  rows.push([`the serial goal: ${goal}x the real OVN's serial rate above`, goalPerS === undefined ? 'na' : fmt(goalPerS), '', besides]);
  return {
    rows,
    figures: {
      floor_serial_per_s: Math.round(floor.leaderWaits.perS),
      floor_serial_p50_ms: Number(floor.leaderWaits.p50Ms.toFixed(3)),
      floor_followers_only_per_s: Math.round(floor.followersOnly.perS),
      ...(transport === undefined ? {} : {
        floor_hops_serial_per_s: Math.round(transport.floor.leaderWaits.perS),
        floor_hops_serial_p50_ms: Number(transport.floor.leaderWaits.p50Ms.toFixed(3)),
        floor_hops_followers_only_per_s: Math.round(transport.floor.followersOnly.perS),
      }),
      serial_goal_per_s: goalPerS === undefined ? 'na' : Math.round(goalPerS),
      serial_goal_over_floor: over === undefined ? 'na' : Number(over.toFixed(3)),
      ...(transport === undefined ? {} : {
        serial_goal_over_hops_floor: overTransport === undefined ? 'na' : Number(overTransport.toFixed(3)),
        serial_goal_over_best_hops_floor: overBestTransport === undefined ? 'na' : Number(overBestTransport.toFixed(3)),
      }),
    },
  };
}

if (process.argv[2] === 'follower' && process.argv[1] === self) follower(process.argv[3] as string);
