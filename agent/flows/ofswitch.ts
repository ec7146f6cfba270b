// The FlowSwitch of a real ovs-vswitchd, over our OpenFlow 1.5 channel. Each batch is one
// atomic bundle (group adds/modifications, flow deletions, modifications, additions, group
// deletions, in that order) closed by a barrier, between the batch's meter_mods: adds and
// modifications before the bundle, deletions after it (Open vSwitch takes no meter_mod in a
// bundle, as ovn-controller's ofctrl notes). On every new connection it first finds or
// creates the Geneve TLV mapping for OVN's option (class 0x0102, type 0x80, 4 bytes), as
// ovn-controller's ofctrl does, and moves its generation so that the owner reconciles: the
// installed flows are dumped and only the difference is sent, never a clear-and-reinstall.

import type { OfChannel } from '../openflow/channel.js';
import { ChannelError } from '../openflow/channel.js';
import { NX_VENDOR_ID } from '../openflow/fields.js';
import type { FlowMod, GroupMod, MeterMod, OfMessage } from '../openflow/messages.js';
import type { FlowSpec, GroupSpec, MeterSpec, OfAction } from '../openflow/types.js';
import { OVN_GENEVE } from './physical.js';
import type { FlowSwitch, ReconcileResult, SwitchBatch, SwitchContents } from './switch.js';

/** NXT_CT_FLUSH_ZONE: Nicira message 29, body struct nx_zone_id (6 zero bytes, zone). */
const NXT_CT_FLUSH_ZONE = 29;

export function ctFlushZone(zone: number): OfMessage {
  const data = Buffer.alloc(8);
  data.writeUInt16BE(zone, 6);
  return { kind: 'experimenter', experimenter: NX_VENDOR_ID, expType: NXT_CT_FLUSH_ZONE, data };
}

/** tun_metadata0..63. */
const TUN_METADATA_FIELDS = 64;

export class OfSwitchError extends Error {
  override readonly name = 'OfSwitchError';
  constructor(readonly kind: 'no_geneve_option' | 'reconnected' | 'undecodable', message: string) {
    super(`${kind}: ${message}`);
  }
}

export class OfSwitch implements FlowSwitch {
  private gen = 0;
  /** The channel connection (connectionsN) the TLV mapping and generation were set up for. */
  private setupFor = -1;
  private field = 'tun_metadata0';
  /** Group ids the switch holds, as far as this switch object knows. */
  private readonly groupIds = new Set<number>();
  /** Meter ids likewise. */
  private readonly meterIds = new Set<number>();

  /**
   * readyTimeoutMs: how long prepare() waits for a connection before it gives up (the owner then
   * reports the failure and reconciles on a later apply, instead of stalling on a switch that
   * is down).
   */
  constructor(readonly channel: OfChannel, private readonly readyTimeoutMs = 5_000) {}

  get generation(): number {
    return this.gen;
  }

  get geneveField(): string {
    return this.field;
  }

  /**
   * Makes sure the current connection is set up (Geneve mapping found or made); a new connection
   * moves the generation. Call before reading generation and geneveField.
   */
  async prepare(): Promise<void> {
    if (!this.channel.isReady) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ChannelError('disconnected', `no connection to the switch within ${this.readyTimeoutMs} ms`)), this.readyTimeoutMs);
      });
      try {
        await Promise.race([this.channel.whenReady(), timeout]);
      } finally {
        clearTimeout(timer);
      }
    }
    const conn = this.channel.connectionsN;
    if (conn === this.setupFor) return;
    this.field = `tun_metadata${await this.geneveIndex()}`;
    this.setupFor = conn;
    this.gen++;
  }

  /** The tun_metadata index OVN's option is mapped to, mapping it at the lowest free index if
   *  nobody has (another controller may race us: then the mapping it made is used). */
  private async geneveIndex(): Promise<number> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [reply] = await this.channel.request({ kind: 'tlv_table_request' });
      if (reply?.kind !== 'tlv_table_reply') throw new ChannelError('protocol', `expected a TLV table reply, got ${reply?.kind ?? 'nothing'}`);
      const used = new Set<number>();
      for (const m of reply.mappings) {
        if (m.optClass === OVN_GENEVE.optClass && m.optType === OVN_GENEVE.optType && m.optLen === OVN_GENEVE.optLen) return m.index;
        used.add(m.index);
      }
      let index = 0;
      while (index < TUN_METADATA_FIELDS && used.has(index)) index++;
      if (index === TUN_METADATA_FIELDS) throw new OfSwitchError('no_geneve_option', 'every tun_metadata field is mapped to another Geneve option');
      try {
        await this.channel.command({ kind: 'tlv_table_mod', command: 'add', mappings: [{ ...OVN_GENEVE, index }] });
        return index;
      } catch (err) {
        // Someone mapped it (or that index) between our request and our mod: look again.
        if (!(err instanceof ChannelError && err.kind === 'openflow_error') || attempt === 1) throw err;
      }
    }
    throw new OfSwitchError('no_geneve_option', 'the Geneve TLV mapping could not be made');
  }

  /** The batch is refused if the connection changed since prepare(): the switch may have
   *  restarted, so the owner must reconcile instead. */
  private checkConnection(): void {
    if (this.channel.connectionsN !== this.setupFor) {
      throw new OfSwitchError('reconnected', 'the switch connection was re-established; reconcile first');
    }
  }

  async install(batch: SwitchBatch): Promise<void> {
    await this.prepare();
    this.checkConnection();
    if (batch.putMeters.length > 0) {
      const put: MeterMod[] = batch.putMeters.map((m) => ({ command: this.meterIds.has(m.meterId) ? 'modify' : 'add', meter: m }));
      try {
        await this.channel.installMeterMods(put);
      } finally {
        // What took effect is not known after a refusal; the owner reconciles, which resets this.
        for (const m of batch.putMeters) this.meterIds.add(m.meterId);
      }
    }
    const mods: (FlowMod | GroupMod)[] = [];
    for (const g of batch.putGroups) mods.push({ command: this.groupIds.has(g.groupId) ? 'modify' : 'add', group: g });
    for (const f of batch.deleteFlows) {
      mods.push({ command: 'delete_strict', table: f.table, priority: f.priority, match: f.match, actions: [], cookie: 0n, cookieMask: 0n });
    }
    for (const f of batch.modifyFlows) {
      mods.push({ command: 'modify_strict', table: f.table, priority: f.priority, match: f.match, actions: f.actions, cookie: f.cookie, cookieMask: 0n });
    }
    for (const f of batch.addFlows) mods.push({ command: 'add', table: f.table, priority: f.priority, match: f.match, actions: f.actions, cookie: f.cookie });
    for (const id of batch.deleteGroups) mods.push({ command: 'delete', group: { groupId: id, type: 'all', buckets: [] } });
    await this.channel.installBatch(mods);
    for (const g of batch.putGroups) this.groupIds.add(g.groupId);
    for (const id of batch.deleteGroups) this.groupIds.delete(id);
    if (batch.deleteMeters.length > 0) {
      await this.channel.installMeterMods(batch.deleteMeters.map((id): MeterMod => ({ command: 'delete', meter: { meterId: id, flags: 0, bands: [] } })));
      for (const id of batch.deleteMeters) this.meterIds.delete(id);
    }
  }

  async flushCtZones(zones: readonly number[]): Promise<void> {
    await this.prepare();
    for (const zone of zones) await this.channel.command(ctFlushZone(zone));
  }

  async dumpAll(): Promise<SwitchContents> {
    await this.prepare();
    const stats = await this.channel.dumpFlows();
    const flows: FlowSpec[] = [];
    for (const f of stats) {
      if (!Array.isArray(f.actions)) {
        throw new OfSwitchError('undecodable', `table ${f.table} priority ${f.priority}: ${(f.actions as { undecodable: string }).undecodable}`);
      }
      flows.push({ table: f.table, priority: f.priority, match: f.match, actions: f.actions as readonly OfAction[], cookie: f.cookie });
    }
    const groups: GroupSpec[] = await this.channel.dumpGroups();
    const meters: MeterSpec[] = await this.channel.dumpMeters();
    return { flows, groups, meters };
  }

  async reconcile(want: SwitchContents): Promise<ReconcileResult> {
    await this.prepare();
    this.checkConnection();
    const r = await this.channel.reconcile(want.flows, { groups: want.groups, meters: want.meters });
    this.groupIds.clear();
    for (const g of want.groups) this.groupIds.add(g.groupId);
    this.meterIds.clear();
    for (const m of want.meters) this.meterIds.add(m.meterId);
    return { added: r.added, modified: r.modified, deleted: r.deleted, unchanged: r.unchanged };
  }
}
