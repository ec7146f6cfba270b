// The seam between a Raft node's shell and the network. The shell hands over whole messages
// (a snapshot as one `snap` message); the transport frames, chunks, queues and delivers them,
// and hands received messages back. Implementations: grpc-transport.ts (peers in other
// processes) and local-transport.ts (peers in one process, for tests).
import type { Message, NodeId } from './types.js';

/** What the transport tells the node about delivery, so Raft can adjust its progress. */
export type TransportReport =
  /**
   * A `snap` message to `to` was delivered whole (ok) or failed (the leader retries later);
   * a failure says why when the transport knows (the peer's refusal, a lost connection).
   */
  | { readonly kind: 'snapshot'; readonly to: NodeId; readonly ok: boolean; readonly reason?: string }
  /** A message to `to` could not be delivered (connection failed, queue full). */
  | { readonly kind: 'unreachable'; readonly to: NodeId };

export interface TransportHandlers {
  /**
   * Called for each message received from a peer, in the order that peer sent them, after
   * the transport checked the cluster id and that the message is addressed to this node.
   */
  readonly onMessage: (m: Message) => void;
  readonly onReport: (r: TransportReport) => void;
}

export interface TransportStats {
  /** Messages dropped because a peer's send queue was full, per peer. */
  readonly droppedQueueFull: ReadonlyMap<NodeId, number>;
  /** Messages refused because they named another cluster or another node. */
  readonly refusedForeign: number;
  readonly sent: number;
  readonly received: number;
  /** Connections closed at once because the node's listener held its most (a transport with a listener). */
  readonly refusedConnections?: number;
}

/** A transport's connections with one peer. */
export interface PeerLinks {
  /** The stream this node sends on: open, or wanted (messages wait) and not open. */
  readonly outgoing: 'open' | 'down' | undefined;
  /** Streams the peer sends this node on, open now. */
  readonly incoming: number;
}

export interface Transport {
  /** Starts listening and delivering to `handlers`. Resolves once the listener is up. */
  start(handlers: TransportHandlers): Promise<void>;
  /**
   * Queues messages for their peers and returns at once: never blocks, never throws for a
   * slow or absent peer. A peer whose bounded queue is full loses the message (counted, and
   * reported as unreachable); Raft's retries make that safe.
   */
  send(messages: readonly Message[]): void;
  /**
   * The most bytes of entry data one message to a peer can carry (undefined: no bound). Raft
   * refuses to propose more (RaftNodeOptions.entryBytesMax).
   */
  readonly entryBytesMax?: number;
  /** The current address of every peer (membership changes call this again). */
  setPeers(peers: ReadonlyMap<NodeId, string>): void;
  stats(): TransportStats;
  /**
   * A short text this node's owner tells every peer with its messages (the central node's
   * apply versions, server/apply-version.ts); opaque to the transport and to Raft, at most
   * MEMBER_INFO_CHARS_MAX characters. Set it before the node starts: a transport may carry it
   * only on the connections it opens afterwards.
   */
  setMemberInfo?(info: string): void;
  /**
   * What `id` last told (setMemberInfo on its side), learned from its messages: undefined
   * until one arrived. A peer restarted with other software tells its new text.
   */
  peerInfo?(id: NodeId): string | undefined;
  /**
   * The connections with each peer now (for status: ovsdb-server's "Connections" line), for
   * a transport that has connections; peers with none, and nothing to send, are left out.
   */
  links?(): ReadonlyMap<NodeId, PeerLinks>;
  /** Stops listening, drops queued messages, closes connections. */
  close(): Promise<void>;
}

/** The longest text setMemberInfo takes. */
export const MEMBER_INFO_CHARS_MAX = 256;

/** Checks a member info text: printable ASCII, at most MEMBER_INFO_CHARS_MAX characters. */
export function checkMemberInfo(info: string): string {
  if (info.length > MEMBER_INFO_CHARS_MAX || !/^[\x20-\x7e]*$/.test(info)) {
    throw new Error(`member info must be printable ASCII of at most ${MEMBER_INFO_CHARS_MAX} characters`);
  }
  return info;
}
