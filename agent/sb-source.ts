// Where an agent's view of the Southbound comes from, and where its chassis-side writes go.
// The agent runtime reads only this interface: the per-chassis gRPC stream (proto/southbound.proto)
// implements it, and so can a test's in-process source. Rows arrive decoded (ovsdb Row values,
// as the SB schema types them), grouped by the revision that produced them.

import type { Row } from '../ovsdb/index.js';

/** One row as it is after a revision; 'row' absent means the row is gone. */
export interface SbRowChange {
  readonly table: string;
  readonly uuid: string;
  readonly row?: Row;
  /**
   * When the source built 'row' from the row `base` and set differences (the stream's
   * set_difference_tables): what each differenced column gained and lost, ascending. A consumer
   * holding exactly `base` may use them rather than compare the two sets; any other must not.
   */
  readonly diffs?: {
    readonly base: Row;
    readonly columns: ReadonlyMap<string, { readonly added: readonly unknown[]; readonly removed: readonly unknown[] }>;
  };
}

/**
 * A step of the agent's SB view from fromRevision to toRevision. With reset, the agent replaces
 * everything it holds by 'changes' (a snapshot) — without clearing its installed flows first: it
 * recomputes and installs the difference. An update with no changes only advances the revision.
 */
export interface SbUpdate {
  readonly reset: boolean;
  readonly fromRevision: number;
  readonly toRevision: number;
  readonly changes: readonly SbRowChange[];
}

export interface ChassisEncap {
  readonly type: string;
  readonly ip: string;
}

/** What the agent says of itself when it (re)connects. */
export interface ChassisHello {
  readonly chassis: string;
  readonly hostname: string;
  readonly encaps: readonly ChassisEncap[];
  /** The last revision the agent applied, 0 when it holds nothing: a source resumes after it. */
  readonly lastRevision: number;
  /** Send every SB row, not only those of this chassis's interest set. */
  readonly monitorAll?: boolean;
  /**
   * Logical ports (the iface-ids of local interfaces) whose Port_Binding the agent wants even
   * while they are bound elsewhere or nowhere, so that it can claim them. setIfaceIds changes
   * them later.
   */
  readonly ifaceIds?: readonly string[];
}

export type SbSourceState =
  | {
    readonly state: 'connected';
    readonly endpoint: string;
    /** How the view continued: by the changes since the agent's revision, or by a snapshot. */
    readonly resumedBy?: 'delta' | 'snapshot';
  }
  | { readonly state: 'disconnected'; readonly endpoint: string; readonly reason: string };

export interface SbSource {
  /**
   * Starts delivering updates in revision order. The source awaits each onUpdate before it
   * delivers the next, so updates never overlap; on reconnect it resumes after the last revision
   * the agent acknowledged (or was delivered), or delivers a reset.
   */
  start(hello: ChassisHello, onUpdate: (u: SbUpdate) => Promise<void>, onState?: (s: SbSourceState) => void): void;
  /**
   * Everything up to 'revision' is installed (flows and bindings). nbCfg is the SB_Global.nb_cfg
   * of that revision: the source makes it this chassis's Chassis_Private.nb_cfg, which is what
   * `--wait=hv` waits for. 'error' reports a revision that could not be applied in full.
   */
  ack(revision: number, nbCfg: number, error?: string): void;
  /**
   * A chassis-side OVN_Southbound transaction (Chassis, Encap, Chassis_Private, MAC_Binding,
   * FDB, and Port_Binding's chassis-owned columns); resolves to the OVSDB results array.
   */
  transact(ops: readonly unknown[]): Promise<unknown[]>;
  /**
   * Replaces the wanted iface-ids (see ChassisHello.ifaceIds): Port_Bindings newly named arrive,
   * and those no longer named (and not otherwise of interest) leave, in a later update. A
   * source that sends every row (monitor-all) may omit it.
   */
  setIfaceIds?(ifaceIds: readonly string[]): void;
  /**
   * Starts over (ovn-controller's sb-cluster-state-reset): the source drops its connection,
   * reconnects without claiming any revision, and its next update is a reset holding the whole
   * view. Updates already handed over are acknowledged as usual.
   */
  resync?(): void;
  /**
   * The inactivity probe of the connection to the central (ovn-remote-probe-interval), in ms; 0:
   * none. A source may apply it on its next connection or reconnect to apply it.
   */
  setProbeIntervalMs?(ms: number): void;
  close(): Promise<void>;
}
