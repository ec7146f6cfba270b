// `ovnts snapshot save | inspect | restore`: backups of a running cluster and new clusters made
// from them. The file is server/snapshot-file.ts's: a header, the state-machine snapshot at a
// linearizable revision, and a SHA-256 over both.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { encodeNodeSnapshot } from '../../cluster/node.js';
import { RaftStorage } from '../../cluster/storage.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { AdminClient } from '../../server/admin-service.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';
import { SnapshotFileWriter, readSnapshotFile, type SnapshotHeader } from '../../server/snapshot-file.js';
import { clusterIdFile } from '../lib/cluster-id.js';
import type { TlsCredentials } from '../../cluster/tls.js';
import { clusterFrom } from '../lib/endpoints.js';
import { addTlsFlags, clientTlsDefaults, type TlsFlagValues } from '../lib/tls-flags.js';

/** How far a save has come, shown on a terminal only: a script reading stderr sees nothing. */
interface SaveProgress {
  start(totalBytes: number): void;
  update(bytes: number): void;
  stop(): void;
}

const MiB = 1024 * 1024;

function progressOn(stream: NodeJS.WriteStream, address: string): SaveProgress {
  if (stream.isTTY !== true) return { start: () => undefined, update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar(
    { stream, format: `saving from ${address} [{bar}] {percentage}% {doneMiB}/{totalMiB} MiB`, hideCursor: true, etaBuffer: 20 },
    cliProgress.Presets.shades_classic,
  );
  let total = 0;
  return {
    start: (totalBytes) => {
      total = totalBytes;
      bar.start(totalBytes, 0, { doneMiB: '0.0', totalMiB: (totalBytes / MiB).toFixed(1) });
    },
    update: (bytes) => bar.update(bytes, { doneMiB: (bytes / MiB).toFixed(1), totalMiB: (total / MiB).toFixed(1) }),
    stop: () => bar.stop(),
  };
}

/**
 * Streams a snapshot from one member into FILE.partial, chunk by chunk as it arrives (never
 * held whole), and renames it once the member's checksum matches what arrived.
 */
async function saveFrom(address: string, file: string, tls: TlsCredentials | undefined): Promise<SnapshotHeader> {
  const c = new AdminClient(address, undefined, tls);
  const writer = new SnapshotFileWriter(file);
  const progress = progressOn(process.stderr, address);
  try {
    return await new Promise<SnapshotHeader>((resolve, reject) => {
      let header: SnapshotHeader | undefined;
      let received = 0;
      const stream = c.snapshotSave();
      stream.on('data', (m: { headerJson: string; data: Uint8Array; sha256: Uint8Array }) => {
        try {
          if (m.headerJson !== '') {
            header = writer.writeHeader(m.headerJson);
            progress.start(header.dataBytes);
          } else if (m.sha256.byteLength > 0) {
            writer.finish(m.sha256);
          } else {
            writer.writeData(m.data);
            received += m.data.byteLength;
            progress.update(received);
          }
        } catch (err) {
          stream.cancel();
          reject(err as Error);
        }
      });
      stream.on('error', (err: Error) => reject(err));
      stream.on('end', () => (header === undefined ? reject(new Error('the member sent no snapshot')) : resolve(header)));
    });
  } catch (err) {
    writer.abort();
    throw err;
  } finally {
    progress.stop();
    c.close();
  }
}

/** Row counts of the NB database in a snapshot, and of the SB view northd derives from it. */
export function inspectSnapshot(data: Uint8Array): { nb: Map<string, number>; sb: Map<string, number>; applyVersion: number } {
  const projection = new NorthdProjection();
  const sm = new NbStateMachine({ schema: parseDatabaseSchema(NB_SCHEMA_JSON), projection });
  sm.restore(data);
  const nb = new Map<string, number>();
  for (const [name, t] of sm.nb.tables) if (t.rows.size > 0) nb.set(name, t.rows.size);
  const sb = new Map<string, number>();
  for (const [name, rows] of projection.view()) if (rows.size > 0) sb.set(name, rows.size);
  return { nb, sb, applyVersion: sm.applyVersion };
}

interface RestoreOptions {
  dataDir: string;
  name: string;
  initialCluster: string;
  clusterId?: string;
}

export function registerSnapshotCommand(program: Command): void {
  const snapshot = program.command('snapshot').description('back up a running cluster, check a backup, make a new cluster from one');

  addTlsFlags(snapshot.command('save'), 'the client\'s', clientTlsDefaults)
    .argument('<file>', 'where to write the snapshot')
    .option('--endpoints <list>', 'members\' gRPC addresses (default: $OVNTS_NB or ./.ovnts/env); the first that answers serves it')
    .description('a consistent copy of the database at a linearizable revision')
    .action(async (file: string, o: { endpoints?: string } & TlsFlagValues) => {
      let last: unknown;
      const target = clusterFrom(o);
      for (const address of target.endpoints) {
        try {
          const h = await saveFrom(address, file, target.tls);
          process.stdout.write(`saved revision ${h.revision} of cluster ${h.clusterId} (${h.dataBytes} bytes of data) from ${address} to ${file}\n`);
          return;
        } catch (err) {
          last = err;
        }
      }
      throw new Error(`no member could give a snapshot: ${(last as Error | undefined)?.message ?? 'no endpoints'}`);
    });

  snapshot
    .command('inspect')
    .argument('<file>', 'a snapshot file')
    .option('--format <f>', 'table or json', 'table')
    .description('verify the checksum; print the header and row counts')
    .action((file: string, o: { format: string }) => {
      const { header, data, fileBytes } = readSnapshotFile(file);
      const { nb, sb, applyVersion } = inspectSnapshot(data);
      if (o.format === 'json') {
        process.stdout.write(JSON.stringify({ header, fileBytes, applyVersion, nbRows: Object.fromEntries(nb), sbRows: Object.fromEntries(sb) }, null, 2) + '\n');
        return;
      }
      const lines = [
        `checksum: ok (${fileBytes} bytes)`,
        `cluster ${header.clusterId}, revision ${header.revision}, taken ${header.createdAt}`,
        `schemas: ${header.nbSchema.name} ${header.nbSchema.version}, ${header.sbSchema.name} ${header.sbSchema.version}`,
        `apply version ${applyVersion} (docs/operations.md, Upgrades)`,
        'OVN_Northbound rows:',
        ...[...nb].map(([t, n]) => `  ${t.padEnd(28)} ${n}`),
        'OVN_Southbound rows (derived by northd from the above):',
        ...[...sb].map(([t, n]) => `  ${t.padEnd(28)} ${n}`),
      ];
      process.stdout.write(lines.join('\n') + '\n');
    });

  snapshot
    .command('restore')
    .argument('<file>', 'a snapshot file')
    .requiredOption('--data-dir <dir>', 'the new member\'s data folder (must not exist or be empty)')
    .requiredOption('--name <name>', 'this member\'s name in --initial-cluster')
    .requiredOption('--initial-cluster <names>', 'the new cluster\'s members, comma-separated (n1,n2,n3), in `ovnts central --peers` order')
    .option('--cluster-id <id>', 'the new cluster\'s id (default: derived from the file and the members, so every member gets the same)')
    .description('make one member of a NEW cluster from a snapshot; run it for every member, then start them')
    .action(async (file: string, o: RestoreOptions) => {
      const { header, data } = readSnapshotFile(file);
      const names = o.initialCluster.split(',').map((s) => s.trim().replace(/=.*$/, '')).filter(Boolean);
      const id = names.indexOf(o.name) + 1;
      if (id === 0) throw new Error(`--name ${o.name} is not in --initial-cluster ${o.initialCluster}`);
      if (new Set(names).size !== names.length) throw new Error('--initial-cluster names a member twice');
      if (existsSync(o.dataDir) && readdirSync(o.dataDir).length > 0) throw new Error(`${o.dataDir} is not empty: restore makes a new member`);
      const clusterId = o.clusterId ?? `restored-${createHash('sha256').update(data).update(names.join(',')).digest('hex').slice(0, 16)}`;
      mkdirSync(o.dataDir, { recursive: true });
      // The log starts at the snapshot: revisions continue above it, so a watcher of the old
      // cluster that resumes here is told its revision was compacted and re-reads.
      const storage = await RaftStorage.open(o.dataDir);
      try {
        const voters = names.map((_, i) => i + 1);
        await storage.save({
          snapshot: { meta: { index: header.revision, term: 1, conf: { voters, learners: [], removed: [] } }, data: encodeNodeSnapshot(data, []) },
          entries: [],
          hardState: { term: 1, vote: 0, commit: header.revision },
        });
      } finally {
        await storage.close();
      }
      writeFileSync(join(o.dataDir, clusterIdFile), `${clusterId}\n`);
      process.stdout.write(`member ${o.name} (id ${id}) of new cluster ${clusterId} restored at revision ${header.revision} in ${o.dataDir}\n`);
    });
}
