// Asking every member of a cluster the same Admin question: a member that does not answer is
// listed with its error rather than failing the whole command, so a down or partitioned member
// shows as such (`cluster status`, `sbctl engine-stats`).
import { AdminClient } from '../../server/admin-service.js';
import type { ClusterTarget } from './endpoints.js';

/** One member's answer under `key`, or why it gave none. */
export type MemberAnswer<K extends string, T> = ({ address: string } & { [k in K]: T }) | { address: string; error: string };

/** Timeout of each member's answer. */
const ASK_TIMEOUT_MS = 5_000;

/** Asks every member of `target` (bin/lib/endpoints.ts: its endpoints, reached with its TLS identity, if any). */
export async function askEveryMember<K extends string, T>(target: ClusterTarget, key: K, ask: (c: AdminClient) => Promise<T>): Promise<MemberAnswer<K, T>[]> {
  return Promise.all(
    target.endpoints.map(async (address): Promise<MemberAnswer<K, T>> => {
      const c = new AdminClient(address, ASK_TIMEOUT_MS, target.tls);
      try {
        return { address, [key]: await ask(c) } as MemberAnswer<K, T>;
      } catch (err) {
        return { address, error: (err as Error).message };
      } finally {
        c.close();
      }
    }),
  );
}
