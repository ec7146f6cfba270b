// OVN's action language → OpenFlow actions, after lib/actions.c of OVN 23.03 (its parse and
// encode steps done in one pass). Semantics follow ovn-sb(5)'s Logical_Flow actions; encodings
// follow what ovn-controller 23.03 installs (checked against ovs-ofctl, see the golden tests).
// Some actions add prerequisites to the flow's match (ct_next needs `ip`, arp { } needs `ip4`,
// a field like tcp.dst needs `tcp`); they come back as expression strings for the caller to AND
// in. Pure: no I/O; the group id of ct_lb's backends, of fwd_group's child ports and of select's
// members comes from the caller's allocator. Bad input is an error value, never an exception.

import { formatIntPart, lex, type IntFormat, type Token } from '../expr/lexer.js';
import type { ExprSymbol, Symtab } from '../expr/symbols.js';
import { ACTION_OPCODE, LOG_PIPELINE_LEN, LOG_REG, MLF, OFTABLE, OFTABLE_OUTPUT_INIT, OVN_CT, controllerUserdata } from '../compile/tables.js';
import type { FieldRef, LearnSpec, NatSpec, OfAction } from '../openflow/types.js';
import { parseLbAddress, type LbBackend } from './lb-key.js';
import { checkNdRaOptions, encodeNdRa, ndRaOpts } from './nd-ra.js';
import { checkEmptyLbBackendsOptions, controllerEventTypes, encodeControllerEvent, eventNameBytesMax } from './controller-event.js';
import { setMeterName } from './set-meter.js';
import { fwdGroupDescription, type FwdGroup, type FwdGroupBucket } from './fwd-group.js';
import { encodeSample, type Sample } from './sample.js';
import { selectGroupDescription, selectWeightDefault, type SelectMember } from './select.js';
import { ovsFieldName } from '../compile/ofctl.js';
import {
  defaultDhcpOpts, defaultDhcpv6Opts, dhcpOffererIpCode, encodeDhcpOptions, encodeDhcpv6Options, type DhcpOpt, type DhcpOption,
} from './dhcp.js';
import { checkWritable, ofWidth, resolveField, type ActionField, type WriteScope } from './fields.js';

export type Pipeline = 'ingress' | 'egress';

export interface ActionContext {
  readonly symtab: Symtab;
  readonly pipeline: Pipeline;
  /** The logical table the flow is in (Logical_Flow.table_id). */
  readonly table: number;
  /** A logical switch (conntrack in reg13) or a router (reg11/reg12). */
  readonly isSwitch: boolean;
  /** Port or multicast group name → tunnel key in this datapath; unknown names load 0. */
  readonly lookupPort?: ((name: string) => number | undefined) | undefined;
  /**
   * The OpenFlow group id for a ct_lb, fwd_group or select group, keyed by OVN's group
   * description text (the same text gives the same id). Absent, or undefined returned: the flow
   * is an error.
   */
  readonly groupId?: ((description: string) => number | undefined) | undefined;
  /**
   * A logical port of this datapath → the OpenFlow port of the tunnel to the chassis it is bound
   * on (fwd_group's liveness); undefined when the port has no binding here, no chassis, or no
   * tunnel to that chassis (the chassis itself has none).
   */
  readonly tunnelOfport?: ((name: string) => number | undefined) | undefined;
  /** The meter of controller() actions (Logical_Flow.controller_meter, resolved); absent = none. */
  readonly ctrlMeterId?: number | undefined;
  /**
   * Meter name → meter id, for log(meter="…") (absent or undefined: the log has no meter) and
   * for the meter set_meter names (absent or undefined: the flow is an error).
   */
  readonly meterId?: ((name: string) => number | undefined) | undefined;
  /**
   * The logical flow's UUID: set_meter's meter is the flow's own, named after it, and
   * sample(obs_point=$cookie) reports its first 32 bits.
   */
  readonly lflowUuid?: string | undefined;
  /** The datapath's tunnel key: the low 24 bits of sample's observation domain. Absent: 0. */
  readonly dpKey?: number | undefined;
  /**
   * Whether the chassis's integration bridge has a Flow_Sample_Collector_Set with this id
   * (ovn-controller's collector_ids). A sample action whose collector set it has not encodes
   * to nothing. Absent: it has none.
   */
  readonly sampleCollector?: ((collectorSetId: number) => boolean) | undefined;
  /** The datapath can commit with an all-zero SNAT (OVS_CT_ZERO_SNAT_SUPPORT): ct_commit adds nat(src). */
  readonly ctZeroSnat?: boolean | undefined;
  /**
   * The datapath has the symmetric L4 dp_hash (OVS_DP_HASH_L4_SYM_SUPPORT): select's groups ask
   * for it (selection_method_param=0x100000000).
   */
  readonly dpHashL4Sym?: boolean | undefined;
  /** The zone of ct_dnat_in_czone/ct_snat_in_czone: reg12 when the router has snat-ct-zone set. */
  readonly commonNatZone?: 'reg11' | 'reg12' | undefined;
  /** DHCPv4 options by name; defaults to OVN 23.03's table. */
  readonly dhcpOpts?: ReadonlyMap<string, DhcpOpt> | undefined;
  /** DHCPv6 options by name; defaults to OVN 23.03's table. */
  readonly dhcpv6Opts?: ReadonlyMap<string, DhcpOpt> | undefined;
}

/** A select group a ct_lb, fwd_group or select action needs installed, as OVN describes it (ovs-ofctl add-group text). */
export interface GroupRequest {
  readonly groupId: number;
  readonly description: string;
}

export type ActionsResult =
  | {
      readonly actions: OfAction[];
      /** Expressions (OVN match syntax) the flow's match must also satisfy. */
      readonly prereqs: string[];
      readonly groups: GroupRequest[];
    }
  | { readonly error: string };

/** OVN's MAX_NESTED_ACTION_DEPTH. */
export const nestedDepthMax = 32;
/** Bounds the text of one flow's actions. */
export const actionCharsMax = 64 * 1024;

class Fail extends Error {}

const reg = (field: string, start = 0, end = 31): FieldRef => ({ field, start, end });
/** IP protocol numbers of the transport protocols load balancers name. */
const IP_PROTO = { tcp: 6, udp: 17, sctp: 132 } as const;
/** How long commit_ecmp_nh's learned flows live: idle, and at most (seconds). */
const ECMP_NH_IDLE_S = 20;
const ECMP_NH_HARD_S = 30;
/**
 * Fields Open vSwitch carries in more bits than they have, where a constant written to all of
 * their bits is still a masked set_field, as ovn-controller 23.03.1 installs it (`ip.dscp = 10`
 * is set_field:10/0x3f->ip_dscp; ip_ecn takes no mask in Open vSwitch).
 */
const wireBits: Readonly<Record<string, number>> = { ip_dscp: 8 };
/** The UUID set_meter names its meter after when the context gives no logical flow. */
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
/** OFP_DEFAULT_PRIORITY: the priority of flows learn() adds. */
const OFP_DEFAULT_PRIORITY = 0x8000;
/** Where an IP argument of the MAC-binding actions goes: reg0, or xxreg0 for IPv6. */
const ipArgReg = (v6: boolean): FieldRef => (v6 ? reg('xxreg0', 0, 127) : reg('reg0'));
/** All-ones masks up to 128 bits, made once: masks are asked for on every constant load. */
const onesTable: readonly bigint[] = Array.from({ length: 129 }, (_, n) => (1n << BigInt(n)) - 1n);
const ones = (n: number): bigint => onesTable[n] ?? (1n << BigInt(n)) - 1n;

function constantWidth(value: bigint, mask: bigint | null, format: IntFormat): number {
  const bits = (v: bigint): number => (v === 0n ? 0 : v.toString(2).length);
  if (mask !== null) return bits(mask);
  if (format === 'ipv4') return 32;
  if (format === 'ipv6') return 128;
  if (format === 'ethernet') return 48;
  return bits(value);
}

function formatIp(value: bigint, format: IntFormat): string {
  return formatIntPart(value, format === 'ipv4' ? 'ipv4' : 'ipv6');
}

/** The NXM/OXM header of a register, as put_dhcp_opts names its result field. */
function oxmHeader(field: string): number[] | null {
  let m = /^reg([0-9]+)$/.exec(field);
  if (m !== null) return [0x00, 0x01, (Number(m[1]) << 1) & 0xff, 0x04];
  m = /^xxreg([0-9]+)$/.exec(field);
  if (m !== null) {
    const f = 111 + Number(m[1]);
    return [0x00, 0x01, (f << 1) & 0xff, 0x10];
  }
  m = /^xreg([0-9]+)$/.exec(field);
  if (m !== null) return [0x80, 0x01, (Number(m[1]) << 1) & 0xff, 0x08];
  return null;
}

const be32 = (n: number): number[] => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];

interface Arg {
  readonly src: FieldRef;
  readonly dst: FieldRef;
}

/** OVN's ovn fields (lib/logical-fields.c ovn_fields): their width and the opcode that sets them. */
interface OvnField {
  readonly bits: 16 | 32;
  readonly opcode: number;
}

const ovnFields: ReadonlyMap<string, OvnField> = new Map([
  ['icmp4.frag_mtu', { bits: 16, opcode: ACTION_OPCODE.PUT_ICMP4_FRAG_MTU }],
  ['icmp6.frag_mtu', { bits: 32, opcode: ACTION_OPCODE.PUT_ICMP6_FRAG_MTU }],
]);

class ActionCompiler {
  private pos = 0;
  readonly prereqs: string[] = [];
  readonly groups: GroupRequest[] = [];

  constructor(private readonly tokens: readonly Token[], private readonly ctx: ActionContext) {}

  // ---- tokens -----------------------------------------------------------------------------

  private get tok(): Token {
    return this.tokens[Math.min(this.pos, this.tokens.length - 1)] as Token;
  }

  private peek(n = 1): Token {
    return this.tokens[Math.min(this.pos + n, this.tokens.length - 1)] as Token;
  }

  private advance(): void {
    if (this.pos < this.tokens.length - 1) this.pos++;
  }

  private isPunct(op: string, t: Token = this.tok): boolean {
    return t.kind === 'punct' && t.op === op;
  }

  private isId(text: string, t: Token = this.tok): boolean {
    return t.kind === 'id' && t.text === text;
  }

  private match(op: string): boolean {
    if (!this.isPunct(op)) return false;
    this.advance();
    return true;
  }

  private matchId(text: string): boolean {
    if (!this.isId(text)) return false;
    this.advance();
    return true;
  }

  private fail(message: string): never {
    throw new Fail(message);
  }

  private syntaxError(expecting?: string): never {
    const t = this.tok;
    const at = t.kind === 'end' ? 'end of input' : `\`${t.text}'`;
    this.fail(expecting === undefined ? `Syntax error at ${at}.` : `Syntax error at ${at} ${expecting}.`);
  }

  private forceMatch(op: string): void {
    if (!this.match(op)) this.syntaxError(`expecting \`${op}'`);
  }

  /** OVN's lexer_get_int: an unmasked decimal that fits an int. */
  private forceInt(): number {
    const t = this.tok;
    if (t.kind !== 'integer' || t.format !== 'decimal' || t.mask !== null || t.value > 0x7fffffffn) this.syntaxError('expecting integer');
    this.advance();
    return Number(t.value);
  }

  // ---- fields -----------------------------------------------------------------------------

  private parseField(): ActionField {
    const t = this.tok;
    if (t.kind !== 'id') this.syntaxError('expecting field name');
    const symbol = this.ctx.symtab.get(t.text);
    if (symbol === undefined) this.syntaxError('expecting field name');
    this.advance();
    if (symbol.prereqs !== null) this.prereqs.push(symbol.prereqs);
    if (symbol.kind === 'predicate') this.fail(`Predicate symbol ${symbol.name} used where lvalue required.`);
    if (!this.match('[')) return { symbol, ofs: 0, nBits: symbol.width };
    if (symbol.width === 0) this.fail(`Cannot select subfield of string field ${symbol.name}.`);
    const low = this.forceSmallInt();
    const high = this.match('..') ? this.forceSmallInt() : low;
    this.forceMatch(']');
    if (low > high) this.fail(`Invalid bit range ${low} to ${high}.`);
    if (high >= symbol.width) this.fail(`Cannot select bits ${low} to ${high} of ${symbol.width}-bit field ${symbol.name}.`);
    if (symbol.level === 'nominal' && (low !== 0 || high !== symbol.width - 1)) {
      this.fail(`Cannot select subfield of nominal field ${symbol.name}.`);
    }
    return { symbol, ofs: low, nBits: high - low + 1 };
  }

  private forceSmallInt(): number {
    const t = this.tok;
    if (t.kind !== 'integer' || t.format !== 'decimal' || t.mask !== null || t.value > 0x7fffffffn) {
      this.syntaxError('expecting small integer');
    }
    this.advance();
    return Number(t.value);
  }

  /** OVN's expr_type_check: width (0 = a string field) and, for a destination, writability. */
  private typeCheck(f: ActionField, nBits: number, rw: boolean, scope: WriteScope): void {
    if (nBits !== f.nBits) {
      if (nBits !== 0 && f.nBits !== 0) {
        this.fail(`Cannot use ${f.nBits}-bit field ${f.symbol.name}[${f.ofs}..${f.ofs + f.nBits - 1}] `
          + `where ${nBits}-bit field is required.`);
      }
      if (nBits !== 0) this.fail(`Cannot use string field ${f.symbol.name} where numeric field is required.`);
      this.fail(`Cannot use numeric field ${f.symbol.name} where string field is required.`);
    }
    if (rw) {
      const err = checkWritable(this.ctx.symtab, f, scope);
      if (err !== null) this.fail(err);
    }
  }

  private resolve(f: ActionField): FieldRef {
    const r = resolveField(this.ctx.symtab, f);
    if (r === undefined) this.fail(`Field ${f.symbol.name} has no OpenFlow field.`);
    return r;
  }

  /** `(a, b, ...)`: one field per width (0: a port name's string field). */
  private argFields(widths: readonly number[]): FieldRef[] {
    this.forceMatch('(');
    const out = widths.map((w, i) => {
      if (i > 0) this.forceMatch(',');
      return this.argField(w);
    });
    this.forceMatch(')');
    return out;
  }

  /** put_arp/put_nd/lookup_arp/lookup_nd's (port, ip, mac), loaded where the MAC-binding tables read them. */
  private bindingArgs(v6: boolean): { src: FieldRef; dst: FieldRef }[] {
    const [port, ip, mac] = this.argFields([0, v6 ? 128 : 32, 48]) as [FieldRef, FieldRef, FieldRef];
    return [
      { src: port, dst: reg(LOG_REG.INPORT) },
      { src: ip, dst: ipArgReg(v6) },
      { src: mac, dst: reg('eth_src', 0, 47) },
    ];
  }

  private argField(nBits: number): FieldRef {
    const f = this.parseField();
    this.typeCheck(f, nBits, false, 'default');
    return this.resolve(f);
  }

  // ---- actions ----------------------------------------------------------------------------

  /** actions := "drop;" | (action ";")*, up to 'sentinel' ('end' or '}'). */
  parseActions(sentinel: 'end' | '}', depth: number, scope: WriteScope): OfAction[] {
    const out: OfAction[] = [];
    const atSentinel = (): boolean => (sentinel === 'end' ? this.tok.kind === 'end' : this.isPunct('}'));
    if (this.isId('drop') && this.isPunct(';', this.peek())) {
      this.advance();
      this.advance();
      if (!atSentinel()) this.syntaxError(sentinel === 'end' ? 'expecting end of input' : "expecting `}'");
      this.advance();
      return out;
    }
    for (let guard = 0; !atSentinel(); guard++) {
      if (this.tok.kind === 'end') this.syntaxError(`expecting \`${sentinel}'`);
      if (guard > this.tokens.length) this.fail('Actions do not make progress.');
      this.parseAction(out, depth, scope);
      this.forceMatch(';');
    }
    this.advance();
    return out;
  }

  private parseAction(out: OfAction[], depth: number, scope: WriteScope): void {
    const t = this.tok;
    if (t.kind === 'template') this.fail('Unexpanded template.');
    if (t.kind !== 'id') this.syntaxError('expecting action');
    const next = this.peek();
    if (this.isPunct('=', next) || this.isPunct('<->', next) || this.isPunct('[', next)) {
      this.parseSetAction(out, scope);
      return;
    }
    const name = t.text;
    const table = this.ctx.table;
    const inPipeline = (this.ctx.pipeline === 'ingress' ? OFTABLE.LOG_INGRESS_PIPELINE : OFTABLE.LOG_EGRESS_PIPELINE);
    switch (name) {
      case 'next': this.advance(); out.push(this.parseNext()); return;
      case 'output':
        this.advance();
        out.push({ kind: 'resubmit', table: this.ctx.pipeline === 'ingress' ? OFTABLE_OUTPUT_INIT : OFTABLE.SAVE_INPORT });
        return;
      case 'push': case 'pop': {
        this.advance();
        this.forceMatch('(');
        const f = this.parseField();
        this.typeCheck(f, f.nBits, name === 'pop', scope);
        this.forceMatch(')');
        out.push(name === 'push' ? { kind: 'push', src: this.resolve(f) } : { kind: 'pop', dst: this.resolve(f) });
        return;
      }
      case 'ip.ttl':
        this.advance();
        if (!(this.isPunct('-') && this.isPunct('-', this.peek()))) this.syntaxError("expecting `--'");
        this.advance();
        this.advance();
        this.prereqs.push('ip');
        out.push({ kind: 'dec_ttl_cnt_ids', controllerIds: [] });
        return;
      case 'ct_next':
        this.advance();
        this.checkNotLast('ct_next');
        this.prereqs.push('ip');
        out.push({ kind: 'ct', commit: false, zone: this.ctZone(), table: inPipeline + table + 1, exec: [] });
        return;
      case 'ct_commit': this.advance(); out.push(this.parseCtCommit(depth)); return;
      case 'ct_dnat': case 'ct_snat': case 'ct_dnat_in_czone': case 'ct_snat_in_czone':
        this.advance();
        out.push(this.parseCtNat(name));
        return;
      case 'ct_commit_nat':
        this.advance();
        this.prereqs.push('ip');
        if (table >= LOG_PIPELINE_LEN) this.fail('"ct_commit_related" action not allowed in last table.');
        out.push({ kind: 'ct', commit: true, zone: this.ctZone(), table: inPipeline + table + 1, nat: { kind: 'plain' }, exec: [] });
        return;
      case 'ct_lb': case 'ct_lb_mark': this.advance(); out.push(this.parseCtLb(name === 'ct_lb_mark')); return;
      case 'ct_clear': this.advance(); out.push({ kind: 'ct_clear' }); return;
      case 'clone': {
        this.advance();
        const nested = this.parseNested(depth, 'default', null);
        out.push({ kind: 'clone', actions: nested });
        return;
      }
      case 'arp': case 'icmp4': case 'icmp4_error': case 'icmp6': case 'icmp6_error': case 'tcp_reset':
      case 'sctp_abort': case 'nd_na': case 'nd_na_router': case 'nd_ns': case 'reject': {
        this.advance();
        const [opcode, prereq] = nestedOps[name] ?? [ACTION_OPCODE.ARP, null];
        const nested = this.parseNested(depth, scope, prereq);
        out.push({ kind: 'controller_op', opcode, nested, ...this.meter() });
        return;
      }
      case 'igmp': this.advance(); out.push(this.controller(ACTION_OPCODE.IGMP, [])); return;
      case 'get_arp': case 'get_nd': {
        this.advance();
        const v6 = name === 'get_nd';
        const [port, ip] = this.argFields([0, v6 ? 128 : 32]) as [FieldRef, FieldRef];
        this.withArgs(out, [{ src: port, dst: reg(LOG_REG.OUTPORT) }, { src: ip, dst: ipArgReg(v6) }], () => [
          { kind: 'set_field', field: 'eth_dst', value: 0n },
          { kind: 'resubmit', table: OFTABLE.MAC_BINDING },
        ]);
        return;
      }
      case 'put_arp': case 'put_nd': {
        this.advance();
        const v6 = name === 'put_nd';
        this.withArgs(out, this.bindingArgs(v6), () => [this.controller(v6 ? ACTION_OPCODE.PUT_ND : ACTION_OPCODE.PUT_ARP, [])]);
        return;
      }
      case 'put_fdb': {
        this.advance();
        const [port, mac] = this.argFields([0, 48]) as [FieldRef, FieldRef];
        this.withArgs(out, [{ src: port, dst: reg(LOG_REG.INPORT) }, { src: mac, dst: reg('eth_src', 0, 47) }],
          () => [this.controller(ACTION_OPCODE.PUT_FDB, [])]);
        return;
      }
      case 'handle_svc_check': {
        this.advance();
        const [port] = this.argFields([0]) as [FieldRef];
        this.withArgs(out, [{ src: port, dst: reg(LOG_REG.INPORT) }], () => [this.controller(ACTION_OPCODE.HANDLE_SVC_CHECK, [])]);
        return;
      }
      case 'bind_vport': {
        // bind_vport("vport", parent): the parent's port key goes in reg14, the virtual port's
        // key (big-endian) after the action header. A port this datapath does not have encodes
        // nothing, as in OVN: the rest of the actions still run.
        this.advance();
        this.forceMatch('(');
        const t = this.tok;
        if (t.kind !== 'string') this.syntaxError('expecting port name string');
        this.advance();
        this.forceMatch(',');
        const parent = this.argField(0);
        this.forceMatch(')');
        const key = this.ctx.lookupPort?.(t.value);
        if (key === undefined) return;
        this.withArgs(out, [{ src: parent, dst: reg(LOG_REG.INPORT) }], () => [this.controller(ACTION_OPCODE.BIND_VPORT, be32(key))]);
        return;
      }
      case 'ct_snat_to_vip': this.advance(); out.push({ kind: 'resubmit', table: OFTABLE.CT_SNAT_HAIRPIN }); return;
      case 'handle_dhcpv6_reply': this.advance(); out.push(this.controller(ACTION_OPCODE.DHCP6_SERVER, [])); return;
      case 'handle_bfd_msg':
        this.advance();
        this.forceMatch('(');
        this.forceMatch(')');
        out.push(this.controller(ACTION_OPCODE.BFD_MSG, []));
        return;
      case 'trigger_event': this.advance(); out.push(this.parseTriggerEvent()); return;
      case 'log': this.advance(); out.push(this.parseLog()); return;
      case 'set_meter': this.advance(); out.push(this.parseSetMeter()); return;
      case 'commit_lb_aff': this.advance(); out.push(this.parseCommitLbAff()); return;
      case 'commit_ecmp_nh': this.advance(); out.push(...this.parseCommitEcmpNh()); return;
      case 'fwd_group': this.advance(); out.push(...this.encodeFwdGroup(this.parseFwdGroup())); return;
      case 'sample': {
        this.advance();
        const sample = this.parseSample();
        if (this.ctx.sampleCollector?.(sample.collectorSetId) === true) {
          out.push(encodeSample(sample, this.ctx.dpKey ?? 0, this.ctx.lflowUuid ?? ZERO_UUID));
        }
        return;
      }
      default:
        this.syntaxError('expecting action');
    }
  }

  private meter(): { meterId?: number } {
    return this.ctx.ctrlMeterId === undefined ? {} : { meterId: this.ctx.ctrlMeterId };
  }

  private controller(opcode: number, args: readonly number[], pause = false, meterId?: number): OfAction {
    const m = meterId ?? this.ctx.ctrlMeterId;
    return {
      kind: 'controller', userdata: controllerUserdata(opcode, args),
      ...(pause ? { pause: true } : {}), ...(m === undefined ? {} : { meterId: m }),
    };
  }

  private ctZone(): FieldRef {
    return reg(this.ctx.isSwitch ? LOG_REG.CT_ZONE : LOG_REG.DNAT_ZONE, 0, 15);
  }

  private checkNotLast(name: string): void {
    if (this.ctx.table >= LOG_PIPELINE_LEN) this.fail(`"${name}" action not allowed in last table.`);
  }

  private firstTable(p: Pipeline): number {
    return p === 'ingress' ? OFTABLE.LOG_INGRESS_PIPELINE : OFTABLE.LOG_EGRESS_PIPELINE;
  }

  private parseNext(): OfAction {
    let pipeline = this.ctx.pipeline;
    let table = this.ctx.table + 1;
    if (this.match('(')) {
      if (this.tok.kind === 'integer' && this.tok.format === 'decimal') {
        table = this.forceInt();
      } else {
        do {
          if (this.matchId('pipeline')) {
            this.forceMatch('=');
            if (this.matchId('ingress')) pipeline = 'ingress';
            else if (this.matchId('egress')) pipeline = 'egress';
            else this.syntaxError('expecting "ingress" or "egress"');
          } else if (this.matchId('table')) {
            this.forceMatch('=');
            table = this.forceInt();
          } else {
            this.syntaxError('expecting "pipeline" or "table"');
          }
        } while (this.match(','));
      }
      this.forceMatch(')');
    }
    if (table >= LOG_PIPELINE_LEN) this.fail(`"next" action cannot advance beyond table ${LOG_PIPELINE_LEN - 1}.`);
    return { kind: 'resubmit', table: this.firstTable(pipeline) + table };
  }

  private parseNested(depth: number, scope: WriteScope, prereq: string | null): OfAction[] {
    if (!this.isPunct('{')) this.syntaxError("expecting `{'");
    this.advance();
    if (depth + 1 >= nestedDepthMax) this.fail('maximum depth of nested actions reached');
    const before = this.prereqs.length;
    const nested = this.parseActions('}', depth + 1, scope);
    if (prereq !== null) {
      // As OVN: the inner actions' prerequisites are dropped and the action's own apply.
      this.prereqs.length = before;
      this.prereqs.push(prereq);
    }
    return nested;
  }

  private parseCtCommit(depth: number): OfAction {
    const base = { kind: 'ct' as const, commit: true, zone: this.ctZone(), ...(this.ctx.ctZeroSnat === true ? { nat: { kind: 'src' as const } } : {}) };
    if (this.isPunct('{')) {
      const exec = this.parseNested(depth, 'ct_commit', 'ip');
      return { ...base, exec };
    }
    this.prereqs.push('ip');
    if (this.match('(')) {
      // The legacy ct_commit(ct_mark=…, ct_label=…): always the switch's zone, as OVN's v1.
      const exec: OfAction[] = [];
      let mark: OfAction | null = null;
      let label: OfAction | null = null;
      while (!this.match(')')) {
        const which = this.matchId('ct_mark') ? 'ct_mark' : this.matchId('ct_label') ? 'ct_label' : null;
        if (which === null) this.syntaxError();
        this.forceMatch('=');
        const t = this.tok;
        if (t.kind !== 'integer') this.syntaxError('expecting integer');
        this.advance();
        const width = which === 'ct_mark' ? 32 : 128;
        const value = t.value & ones(width);
        const mask = t.mask === null ? undefined : t.mask & ones(width);
        const sf: OfAction = { kind: 'set_field', field: which, value, ...(mask === undefined || mask === ones(width) ? {} : { mask }) };
        if (which === 'ct_mark') mark = sf; else label = sf;
        this.match(',');
      }
      if (mark !== null) exec.push(mark);
      if (label !== null) exec.push(label);
      return { ...base, zone: reg(LOG_REG.CT_ZONE, 0, 15), exec };
    }
    return { ...base, exec: [] };
  }

  private parseCtNat(name: string): OfAction {
    this.prereqs.push('ip');
    this.checkNotLast(name);
    const zoneReg = name === 'ct_dnat' ? LOG_REG.DNAT_ZONE
      : name === 'ct_snat' ? LOG_REG.SNAT_ZONE
        : this.ctx.commonNatZone ?? LOG_REG.DNAT_ZONE;
    const type = name.startsWith('ct_dnat') ? 'dst' : 'src';
    let nat: NatSpec = { kind: 'plain' };
    let commit = false;
    if (this.match('(')) {
      const t = this.tok;
      if (t.kind !== 'integer' || (t.format !== 'ipv4' && t.format !== 'ipv6')) this.syntaxError('expecting IPv4 or IPv6 address');
      this.advance();
      commit = true;
      let spec: { kind: 'src' | 'dst'; addrMin: string; portMin?: number; portMax?: number } = {
        kind: type, addrMin: formatIp(t.value, t.format),
      };
      if (this.match(',')) {
        const lo = this.tok;
        if (lo.kind !== 'integer' || lo.format !== 'decimal') this.syntaxError('expecting Integer for port range');
        if (lo.value === 0n) this.syntaxError("range can't be 0");
        if (lo.value > 65535n) this.syntaxError('expecting Integer for port range');
        this.advance();
        spec = { ...spec, portMin: Number(lo.value) };
        if (this.match('-')) {
          const hi = this.tok;
          if (hi.kind !== 'integer' || hi.value > 65535n) this.syntaxError('expecting Integer for port range');
          if (hi.value <= lo.value) this.syntaxError('range high should be greater than range low');
          this.advance();
          spec = { ...spec, portMax: Number(hi.value) };
        }
      }
      this.forceMatch(')');
      nat = spec;
    }
    return { kind: 'ct', commit, zone: reg(zoneReg, 0, 15), table: this.firstTable(this.ctx.pipeline) + this.ctx.table + 1, nat, exec: [] };
  }

  private parseCtLb(mark: boolean): OfAction {
    this.checkNotLast('ct_lb');
    this.prereqs.push('ip');
    const dsts: { text: string; family: 4 | 6; port: number }[] = [];
    let hashFields: string | null = null;
    let flag: 'none' | 'skip_snat' | 'force_snat' = 'none';
    if (this.match('(') && !this.match(')')) {
      if (!this.matchId('backends')) this.syntaxError('expecting backends');
      this.forceMatch('=');
      while (!this.match(';') && !this.match(')')) {
        if (this.tok.kind === 'end') this.syntaxError("expecting `)'");
        if (this.match('[')) {
          const t = this.tok;
          if (t.kind !== 'integer' || t.format !== 'ipv6') this.syntaxError('expecting IPv6 address');
          this.advance();
          if (!this.match(']')) this.syntaxError('no closing square bracket');
          const port = this.match(':') ? this.forceUint16('port number') : 0;
          dsts.push({ text: formatIp(t.value, 'ipv6'), family: 6, port });
        } else {
          const t = this.tok;
          if (t.kind !== 'integer' || (t.format !== 'ipv4' && t.format !== 'ipv6')) this.syntaxError('expecting IP address');
          this.advance();
          let port = 0;
          if (this.match(':')) {
            if (t.format === 'ipv6') this.syntaxError('IPv6 address needs square brackets if port is included');
            port = this.forceUint16('port number');
          }
          dsts.push({ text: formatIp(t.value, t.format), family: t.format === 'ipv4' ? 4 : 6, port });
        }
        this.match(',');
      }
      if (this.matchId('hash_fields')) {
        const s = this.peek(1);
        if (!this.isPunct('=') || s.kind !== 'string') this.syntaxError('invalid hash_fields');
        this.advance();
        this.advance();
        hashFields = s.value;
        if (!this.match(';')) this.advance();
      }
      if (this.matchId('skip_snat')) flag = 'skip_snat';
      else if (this.matchId('force_snat')) flag = 'force_snat';
      // OVN skips one token after the flag (normally the closing parenthesis).
      if (flag !== 'none') this.advance();
    }
    const recirc = this.firstTable(this.ctx.pipeline) + this.ctx.table + 1;
    const zone = this.ctZone();
    if (dsts.length === 0) {
      return { kind: 'ct', commit: false, zone, table: recirc, nat: { kind: 'plain' }, exec: [] };
    }
    const flagReg = mark ? 'ct_mark' : 'ct_label';
    const zoneName = `NXM_NX_REG${zone.field.slice(3)}[0..15]`;
    const flagValue = flag === 'skip_snat' ? OVN_CT.LB_SKIP_SNAT : flag === 'force_snat' ? OVN_CT.LB_FORCE_SNAT : null;
    let desc = `type=select,selection_method=${hashFields !== null ? 'hash' : 'dp_hash'}`;
    if (hashFields !== null) desc += `,fields(${hashFields})`;
    dsts.forEach((d, i) => {
      const addr = d.family === 6 && d.port !== 0 ? `[${d.text}]` : d.text;
      desc += `,bucket=bucket_id=${i},weight:100,actions=ct(nat(dst=${addr}${d.port !== 0 ? `:${d.port}` : ''}),commit,`
        + `table=${recirc},zone=${zoneName},exec(set_field:${OVN_CT.NATTED}/${OVN_CT.NATTED}->${flagReg}`;
      if (flagValue !== null) desc += `,set_field:${flagValue}/${flagValue}->${flagReg}`;
      desc += '))';
    });
    return this.useGroup('ct_lb with backends', desc);
  }

  /**
   * `group:N` for the group 'desc' describes, N from the caller's allocator, and the group noted
   * for the caller to install. Unlike ovn-controller, which leaves the action out when its group
   * table is full, a group without an id is an error ('what' names the action).
   */
  private useGroup(what: string, desc: string): OfAction {
    const id = this.ctx.groupId?.(desc);
    if (id === undefined) this.fail(`${what} needs a group id, and none was given (no group allocator or the table is full).`);
    this.groups.push({ groupId: id, description: desc });
    return { kind: 'group', groupId: id };
  }

  /**
   * fwd_group[(liveness=BOOL, childports="p", ...)] as parse_fwd_group_action reads it: BOOL is
   * true or false, bare or quoted; the names are strings, a comma between them optional. A `(`
   * with neither part leaves the `)` to the `;` that must follow.
   */
  private parseFwdGroup(): FwdGroup {
    let liveness = false;
    const childPorts: string[] = [];
    if (!this.match('(')) return { liveness, childPorts };
    if (this.matchId('liveness')) {
      this.forceMatch('=');
      const t = this.tok;
      const text = t.kind === 'string' ? t.value : t.kind === 'id' ? t.text : undefined;
      if (text !== 'true' && text !== 'false') this.syntaxError('expecting true or false');
      this.advance();
      liveness = text === 'true';
      this.forceMatch(',');
    }
    if (this.matchId('childports')) {
      this.forceMatch('=');
      // Each turn takes a string or fails, so the loop ends within the tokens.
      while (!this.match(')')) {
        const t = this.tok;
        if (t.kind !== 'string') this.syntaxError('expecting logical switch port');
        this.advance();
        this.match(',');
        childPorts.push(t.value);
      }
    }
    return { liveness, childPorts };
  }

  /**
   * encode_FWD_GROUP: `group:N`, N the id of the select group with a bucket per child (see
   * fwd-group.ts). As ovn-controller, nothing at all (the flow's other actions stand) when there
   * is no child, when a child is neither a port nor a multicast group of this datapath, or when,
   * with liveness, a child has no tunnel port (not bound, bound here, or its chassis has no
   * tunnel yet). A group without an id is an error (useGroup).
   */
  private encodeFwdGroup(fg: FwdGroup): OfAction[] {
    if (fg.childPorts.length === 0) return [];
    const buckets: FwdGroupBucket[] = [];
    for (const name of fg.childPorts) {
      const portKey = this.ctx.lookupPort?.(name);
      if (portKey === undefined) return [];
      if (!fg.liveness) {
        buckets.push({ portKey });
        continue;
      }
      const watchPort = this.ctx.tunnelOfport?.(name);
      if (watchPort === undefined) return [];
      buckets.push({ portKey, watchPort });
    }
    const outputTable = this.ctx.pipeline === 'ingress' ? OFTABLE_OUTPUT_INIT : OFTABLE.SAVE_INPORT;
    return [this.useGroup('fwd_group', fwdGroupDescription(buckets, outputTable))];
  }

  /**
   * sample[(arg=value, ...)] as parse_sample reads it: the arguments in any order, commas
   * optional. A decimal number is kept in 32 bits (OVN reads it into a uint32_t), probability
   * must fit 16 and obs_domain 8. An argument whose value is not a decimal number leaves it
   * unset: collector_set and obs_domain skip the token, probability leaves it to be read as the
   * next argument's name (an error). Each turn takes a token or fails, so the loop ends.
   */
  private parseSample(): Sample {
    let probability = 0;
    let collectorSetId = 0;
    let obsDomain = 0;
    let obsPoint: number | 'cookie' = 0;
    const decimal = (): bigint | undefined => {
      const t = this.tok;
      return t.kind === 'integer' && t.format === 'decimal' && t.mask === null ? t.value : undefined;
    };
    const u32 = (v: bigint): number => Number(v & 0xffffffffn);
    if (this.match('(')) {
      while (!this.match(')')) {
        if (this.matchId('probability')) {
          this.forceMatch('=');
          const v = decimal();
          if (v !== undefined) {
            // action_parse_uint16: lexer_is_int (at most INT_MAX), then at most 65535.
            if (v > 0xffffn) this.syntaxError('expecting probability');
            probability = Number(v);
            this.advance();
          }
        } else if (this.matchId('obs_point')) {
          this.forceMatch('=');
          const t = this.tok;
          const v = decimal();
          if (t.kind === 'addressSet' && t.name === 'cookie') obsPoint = 'cookie';
          else if (v !== undefined) obsPoint = u32(v);
          else this.syntaxError('malformed sample observation_point_id');
          this.advance();
        } else if (this.matchId('obs_domain')) {
          this.forceMatch('=');
          const v = decimal();
          if (v !== undefined) {
            if (u32(v) > 0xff) this.syntaxError('obs_domain must be 8-bit long');
            obsDomain = u32(v);
          }
          this.advance();
        } else if (this.matchId('collector_set')) {
          this.forceMatch('=');
          const v = decimal();
          if (v !== undefined) collectorSetId = u32(v);
          this.advance();
        } else {
          this.syntaxError('unknown argument');
        }
        this.match(',');
      }
    }
    if (probability === 0) this.fail('probability must be greater than zero');
    return { probability, collectorSetId, obsDomain, obsPoint };
  }

  /** OVN's action_parse_uint16: an unmasked decimal of at most 65535, else "expecting 'what'". */
  private forceUint16(what: string): number {
    const t = this.tok;
    if (t.kind !== 'integer' || t.format !== 'decimal' || t.mask !== null || t.value > 0xffffn) this.syntaxError(`expecting ${what}`);
    this.advance();
    return Number(t.value);
  }

  /**
   * commit_lb_aff(vip = "V[:P]", backend = "B[:P]"[, proto = tcp|udp|sctp], timeout = T): a
   * learn() into table 78 (OFTABLE_CHK_LB_AFFINITY) of a flow, idle for T seconds at most, that
   * recognises the next connection of the same client to the VIP (and port) and gives it the
   * backend this one got: it sets flags.use_lb_aff_session and loads the backend's address
   * (reg4, or xxreg0 on a switch and xxreg1 on a router for IPv6) and port (reg8[0..15]), as
   * lib/actions.c's encode_COMMIT_LB_AFF. proto is given exactly when the VIP has a port.
   */
  private parseCommitLbAff(): OfAction {
    const invalid = (): never => this.fail('commit_lb_aff: invalid parameter.');
    this.forceMatch('(');
    const address = (name: string): LbBackend => {
      if (!this.matchId(name) || !this.match('=')) invalid();
      const t = this.tok;
      const a = t.kind === 'string' ? parseLbAddress(t.value) : undefined;
      if (a === undefined) return invalid();
      this.advance();
      return a;
    };
    const vip = address('vip');
    this.forceMatch(',');
    const backend = address('backend');
    if (backend.v6 !== vip.v6) this.fail('commit_lb_aff: invalid protocol family.');
    this.forceMatch(',');
    let proto: 'tcp' | 'udp' | 'sctp' | undefined;
    if (vip.port !== 0) {
      if (!this.matchId('proto') || !this.match('=')) invalid();
      const p = this.tok;
      if (p.kind !== 'id' || (p.text !== 'tcp' && p.text !== 'udp' && p.text !== 'sctp')) this.fail('commit_lb_aff: invalid protocol.');
      proto = p.text as 'tcp' | 'udp' | 'sctp';
      this.advance();
      this.forceMatch(',');
    }
    if (!this.matchId('timeout') || !this.match('=')) invalid();
    const timeout = this.forceInt();
    if (timeout > 0xffff) this.fail('commit_lb_aff: affinity timeout must be in range 0...65535.');
    this.forceMatch(')');
    const v6 = vip.v6;
    const ipBits = v6 ? 128 : 32;
    const specs: LearnSpec[] = [
      { kind: 'match', dst: reg('metadata', 0, 63), src: reg('metadata', 0, 63) },
      { kind: 'match', dst: reg('eth_type', 0, 15), value: v6 ? 0x86ddn : 0x0800n },
      { kind: 'match', dst: reg(v6 ? 'ipv6_src' : 'ipv4_src', 0, ipBits - 1), src: reg(v6 ? 'ipv6_src' : 'ipv4_src', 0, ipBits - 1) },
      { kind: 'match', dst: reg(v6 ? 'ipv6_dst' : 'ipv4_dst', 0, ipBits - 1), value: vip.ip },
    ];
    if (proto !== undefined) {
      specs.push({ kind: 'match', dst: reg('ip_proto', 0, 7), value: BigInt(IP_PROTO[proto]) });
      specs.push({ kind: 'match', dst: reg(`${proto}_dst`, 0, 15), value: BigInt(vip.port) });
    }
    specs.push({ kind: 'load', dst: reg(LOG_REG.FLAGS, MLF.USE_LB_AFF_SESSION, MLF.USE_LB_AFF_SESSION), value: 1n });
    const backendReg = !v6 ? reg('reg4') : reg(this.ctx.isSwitch ? 'xxreg0' : 'xxreg1', 0, 127);
    specs.push({ kind: 'load', dst: backendReg, value: backend.ip });
    if (backend.port !== 0) specs.push({ kind: 'load', dst: reg('reg8', 0, 15), value: BigInt(backend.port) });
    return {
      kind: 'learn', table: OFTABLE.CHK_LB_AFFINITY, priority: OFP_DEFAULT_PRIORITY, cookie: 0n, deleteLearned: true,
      ...(timeout === 0 ? {} : { idleTimeout: timeout }), specs,
    };
  }

  /**
   * commit_ecmp_nh(ipv6 = true|false, proto = tcp|udp|sctp), for symmetric replies over ECMP
   * routes: two learn()s (lib/actions.c, commit_ecmp_learn_action), idle 20 s and at most 30 s,
   * that set flags.lookup_commit_ecmp_nh: into table 76 (OFTABLE_ECMP_NH_MAC) a flow for this
   * connection from the same next hop (its MAC, addresses and ports as they are), and into
   * table 77 (OFTABLE_ECMP_NH) one for its replies (addresses and ports swapped).
   */
  private parseCommitEcmpNh(): OfAction[] {
    const invalid = (): never => this.fail('commit_ecmp_nh: invalid parameter.');
    this.forceMatch('(');
    if (!this.matchId('ipv6') || !this.match('=')) invalid();
    const b = this.tok;
    const text = b.kind === 'string' ? b.value : b.kind === 'id' ? b.text : undefined;
    if (text !== 'true' && text !== 'false') this.syntaxError('expecting true or false');
    this.advance();
    const v6 = text === 'true';
    this.forceMatch(',');
    if (!this.matchId('proto') || !this.match('=')) invalid();
    const p = this.tok;
    if (p.kind !== 'id' || (p.text !== 'tcp' && p.text !== 'udp' && p.text !== 'sctp')) this.fail('commit_ecmp_nh: invalid protocol.');
    const proto = p.text as 'tcp' | 'udp' | 'sctp';
    this.advance();
    this.forceMatch(')');
    const bits = v6 ? 128 : 32;
    const ipSrc = reg(v6 ? 'ipv6_src' : 'ipv4_src', 0, bits - 1);
    const ipDst = reg(v6 ? 'ipv6_dst' : 'ipv4_dst', 0, bits - 1);
    const tpSrc = reg(`${proto}_src`, 0, 15);
    const tpDst = reg(`${proto}_dst`, 0, 15);
    const learn = (sameWay: boolean): OfAction => {
      const specs: LearnSpec[] = [{ kind: 'match', dst: reg('metadata', 0, 63), src: reg('metadata', 0, 63) }];
      if (sameWay) specs.push({ kind: 'match', dst: reg('eth_src', 0, 47), src: reg('eth_src', 0, 47) });
      specs.push(
        { kind: 'match', dst: reg('eth_type', 0, 15), value: v6 ? 0x86ddn : 0x0800n },
        { kind: 'match', dst: ipSrc, src: sameWay ? ipSrc : ipDst },
        { kind: 'match', dst: ipDst, src: sameWay ? ipDst : ipSrc },
        { kind: 'match', dst: reg('ip_proto', 0, 7), value: BigInt(IP_PROTO[proto]) },
        { kind: 'match', dst: tpSrc, src: sameWay ? tpSrc : tpDst },
        { kind: 'match', dst: tpDst, src: sameWay ? tpDst : tpSrc },
        { kind: 'load', dst: reg(LOG_REG.FLAGS, MLF.LOOKUP_COMMIT_ECMP_NH, MLF.LOOKUP_COMMIT_ECMP_NH), value: 1n },
      );
      return {
        kind: 'learn', table: sameWay ? OFTABLE.ECMP_NH_MAC : OFTABLE.ECMP_NH, priority: OFP_DEFAULT_PRIORITY, cookie: 0n,
        idleTimeout: ECMP_NH_IDLE_S, hardTimeout: ECMP_NH_HARD_S, deleteLearned: true, specs,
      };
    };
    return [learn(true), learn(false)];
  }

  /**
   * trigger_event(event = "NAME", option = "value", ...): the event first, then its options
   * (agent/actions/controller-event.ts) in any order, each checked as OVN checks them. Not
   * paused; metered by the flow's controller meter (CoPP's event-elb).
   */
  private parseTriggerEvent(): OfAction {
    this.forceMatch('(');
    if (!this.matchId('event')) this.syntaxError("Expecting 'event' option");
    this.forceMatch('=');
    const t = this.tok;
    if (t.kind !== 'string' || new TextEncoder().encode(t.value).length > eventNameBytesMax) this.syntaxError('Expecting string');
    const event = controllerEventTypes.get(t.value);
    // OVN prints the code string_to_event gave back for a name it does not know.
    if (event === undefined) this.syntaxError("Unknown event '-1'");
    this.advance();
    this.match(',');
    const options = this.parseDhcpOptionList(event.opts, t.value);
    const bad = checkEmptyLbBackendsOptions(options);
    if (bad !== undefined) this.fail(bad);
    return this.controller(ACTION_OPCODE.EVENT, encodeControllerEvent(event.code, options));
  }

  private parseLog(): OfAction {
    let verdict: number | null = null;
    let severity = 6;
    let name: string | null = null;
    let meter: string | null = null;
    const severities: Record<string, number> = { alert: 1, warning: 4, notice: 5, info: 6, debug: 7 };
    if (this.match('(')) {
      while (!this.match(')')) {
        if (this.matchId('verdict')) {
          this.forceMatch('=');
          if (this.matchId('allow')) verdict = 0;
          else if (this.matchId('drop')) verdict = 1;
          else if (this.matchId('reject')) verdict = 2;
          else this.syntaxError('unknown verdict');
        } else if (this.isId('name') || this.isId('meter')) {
          const isName = this.isId('name');
          this.advance();
          this.forceMatch('=');
          const t = this.tok;
          if (t.kind !== 'string') this.syntaxError('expecting string');
          if (isName && new TextEncoder().encode(t.value).length >= 64) this.syntaxError('name must be shorter than 64 characters');
          this.advance();
          if (isName) name = t.value; else meter = t.value;
        } else if (this.matchId('severity')) {
          this.forceMatch('=');
          const t = this.tok;
          if (t.kind !== 'id') this.syntaxError('expecting severity');
          const s = severities[t.text];
          if (s === undefined) this.syntaxError('unknown severity');
          this.advance();
          severity = s;
        } else {
          this.syntaxError();
        }
        if (this.tok.kind === 'end') this.syntaxError("expecting `)'");
        this.match(',');
      }
    }
    if (verdict === null) this.syntaxError('expecting verdict');
    const meterId = meter === null ? undefined : this.ctx.meterId?.(meter);
    const args = [verdict, severity, ...(name === null ? [] : new TextEncoder().encode(name))];
    const ud = controllerUserdata(ACTION_OPCODE.LOG, args);
    return { kind: 'controller', userdata: ud, ...(meterId === undefined ? {} : { meterId }) };
  }

  /**
   * set_meter(rate[, burst]) as parse_set_meter_action reads it: a token that is not a plain
   * decimal integer counts as 0 and is skipped all the same; a rate of 0 is an error. The action
   * is meter:N, N the id of the flow's own meter (a kbps drop band of the rate and burst). A rate
   * or burst beyond a band's 32 bits is an error here (ovn-controller would allocate the id,
   * fail to make the meter and install a flow the switch refuses).
   */
  private parseSetMeter(): OfAction {
    this.forceMatch('(');
    const number = (): bigint => {
      const t = this.tok;
      const v = t.kind === 'integer' && t.format === 'decimal' && t.mask === null ? t.value & ones(64) : 0n;
      this.advance();
      return v;
    };
    const rate = number();
    const burst = this.match(',') ? number() : 0n;
    this.forceMatch(')');
    if (rate === 0n) this.fail('Rate 0 for set_meter is not in valid.');
    if (rate > 0xffffffffn || burst > 0xffffffffn) this.fail(`set_meter(${rate}, ${burst}): a meter band holds at most 4294967295.`);
    const id = this.ctx.meterId?.(setMeterName(this.ctx.lflowUuid ?? ZERO_UUID, rate, burst));
    if (id === undefined) this.fail('set_meter needs a meter id, and none was given (no meter allocator or the meter table is full).');
    return { kind: 'meter', meterId: id };
  }

  /** OVN's encode_setup_args / encode_restore_args around 'body': save what the arguments
   *  overwrite, move each argument into its fixed field through the stack, restore after. */
  private withArgs(out: OfAction[], args: readonly Arg[], body: () => OfAction[]): void {
    const moved = args.filter((a) => a.src.field !== a.dst.field);
    for (const a of moved) out.push({ kind: 'push', src: a.dst });
    for (const a of [...moved].reverse()) out.push({ kind: 'push', src: a.src });
    for (const a of moved) out.push({ kind: 'pop', dst: a.dst });
    out.push(...body());
    for (const a of [...moved].reverse()) out.push({ kind: 'pop', dst: a.dst });
  }

  // ---- assignments ------------------------------------------------------------------------

  private parseSetAction(out: OfAction[], scope: WriteScope): void {
    const t0 = this.tok;
    const ovnField = t0.kind === 'id' ? ovnFields.get(t0.text) : undefined;
    if (ovnField !== undefined) {
      this.parseOvnFieldLoad(out, t0.kind === 'id' ? t0.text : '', ovnField);
      return;
    }
    const lhs = this.parseField();
    if (this.match('<->')) {
      const rhs = this.parseField();
      this.checkAssignable(lhs, rhs, true);
      this.typeCheck(lhs, lhs.nBits, true, scope);
      this.typeCheck(rhs, rhs.nBits, true, scope);
      const l = this.resolve(lhs);
      const r = this.resolve(rhs);
      out.push({ kind: 'push', src: r }, { kind: 'push', src: l }, { kind: 'pop', dst: r }, { kind: 'pop', dst: l });
      return;
    }
    if (!this.match('=')) this.syntaxError("expecting `=' or `<->'");
    const t = this.tok;
    if (t.kind === 'id' && this.isPunct('(', this.peek())) {
      if (this.parseFunctionAssignment(out, lhs, t.text, scope)) return;
    }
    if (t.kind === 'id') {
      const rhs = this.parseField();
      this.checkAssignable(lhs, rhs, false);
      this.typeCheck(lhs, lhs.nBits, true, scope);
      this.typeCheck(rhs, rhs.nBits, false, scope);
      out.push({ kind: 'move', src: this.resolve(rhs), dst: this.resolve(lhs) });
      return;
    }
    this.typeCheck(lhs, lhs.nBits, true, scope);
    out.push(this.parseLoad(lhs));
  }

  /**
   * `icmp4.frag_mtu = N;` / `icmp6.frag_mtu = N;` (OVN's "ovn fields": no OpenFlow field holds
   * them): a paused controller action that has ovn-controller write N into the ICMP error being
   * built (pinctrl's put_icmp4_frag_mtu), N big-endian in the field's width. Only a constant may
   * be assigned: OVN has no encoding for a move or exchange with them.
   */
  private parseOvnFieldLoad(out: OfAction[], name: string, f: OvnField): void {
    this.advance();
    if (this.isPunct('<->')) this.fail(`${name} cannot be exchanged: it is not an OpenFlow field.`);
    if (!this.match('=')) this.syntaxError("expecting `=' or `<->'");
    const t = this.tok;
    if (t.kind === 'id') this.fail(`${name} can only be assigned a constant.`);
    if (t.kind === 'string') this.fail(`Integer field ${name} is not compatible with string constant.`);
    if (t.kind !== 'integer') this.syntaxError('expecting constant');
    if (t.mask !== null) this.fail(`${name} cannot be assigned a masked constant.`);
    const w = constantWidth(t.value, t.mask, t.format);
    if (w > f.bits) this.fail(`${w}-bit constant is not compatible with ${f.bits}-bit field ${name}.`);
    this.advance();
    const bytes: number[] = [];
    for (let i = f.bits / 8 - 1; i >= 0; i--) bytes.push(Number((t.value >> BigInt(8 * i)) & 0xffn));
    out.push(this.controller(f.opcode, bytes, true));
  }

  private checkAssignable(lhs: ActionField, rhs: ActionField, exchange: boolean): void {
    const ls = lhs.symbol;
    const rs = rhs.symbol;
    const kindOf = (s: ExprSymbol): string => (s.width !== 0 ? 'integer' : 'string');
    if ((ls.width !== 0) !== (rs.width !== 0)) {
      if (exchange) this.fail(`Can't exchange ${kindOf(ls)} field (${ls.name}) with ${kindOf(rs)} field (${rs.name}).`);
      this.fail(`Can't assign ${kindOf(rs)} field (${rs.name}) to ${kindOf(ls)} field (${ls.name}).`);
    }
    if (lhs.nBits !== rhs.nBits) {
      if (exchange) this.fail(`Can't exchange ${lhs.nBits}-bit field with ${rhs.nBits}-bit field.`);
      this.fail(`Can't assign ${rhs.nBits}-bit value to ${lhs.nBits}-bit destination.`);
    }
  }

  private parseLoad(lhs: ActionField): OfAction {
    const t = this.tok;
    const dst = this.resolve(lhs);
    if (lhs.nBits === 0) {
      if (t.kind === 'integer') this.fail(`String field ${lhs.symbol.name} is not compatible with integer constant.`);
      if (t.kind !== 'string') this.syntaxError('expecting constant');
      this.advance();
      const key = this.ctx.lookupPort?.(t.value) ?? 0;
      return { kind: 'set_field', field: dst.field, value: BigInt(key >>> 0) };
    }
    if (t.kind === 'string') this.fail(`Integer field ${lhs.symbol.name} is not compatible with string constant.`);
    if (t.kind !== 'integer') this.syntaxError('expecting constant');
    this.advance();
    const w = constantWidth(t.value, t.mask, t.format);
    if (w > lhs.nBits) this.fail(`${w}-bit constant is not compatible with ${lhs.nBits}-bit field ${lhs.symbol.name}.`);
    const width = wireBits[dst.field] ?? ofWidth(dst.field) ?? 0;
    const shift = BigInt(dst.start);
    const value = (t.value & ones(lhs.nBits)) << shift;
    const mask = ((t.mask ?? ones(lhs.nBits)) & ones(lhs.nBits)) << shift;
    return mask === ones(width)
      ? { kind: 'set_field', field: dst.field, value }
      : { kind: 'set_field', field: dst.field, value: value & mask, mask };
  }

  /** `dst = f(...)` forms; false if 'name' is not one of them (then it is a field). */
  private parseFunctionAssignment(out: OfAction[], lhs: ActionField, name: string, scope: WriteScope): boolean {
    const result = (n: number): FieldRef => {
      this.typeCheck(lhs, n, true, scope);
      return this.resolve(lhs);
    };
    const flagsBit = (bit: number): FieldRef => reg(LOG_REG.FLAGS, bit, bit);
    const resultAction = (table: number, bit: number): void => {
      this.advance();
      this.forceMatch('(');
      if (!this.match(')')) this.fail(`${name} doesn't take any parameters`);
      const dst = result(1);
      out.push(
        { kind: 'set_field', field: LOG_REG.FLAGS, value: 0n, mask: 1n << BigInt(bit) },
        { kind: 'resubmit', table },
        { kind: 'move', src: flagsBit(bit), dst },
      );
    };
    switch (name) {
      case 'check_pkt_larger': {
        const dst = result(1);
        this.advance();
        this.forceMatch('(');
        const pktLen = this.forceInt();
        this.forceMatch(')');
        if (pktLen > 0xffff) this.fail(`check_pkt_larger length ${pktLen} does not fit in 16 bits.`);
        out.push({ kind: 'check_pkt_larger', pktLen, dst });
        return true;
      }
      case 'check_in_port_sec': resultAction(OFTABLE.CHK_IN_PORT_SEC, MLF.CHECK_PORT_SEC); return true;
      case 'check_out_port_sec': resultAction(OFTABLE.CHK_OUT_PORT_SEC, MLF.CHECK_PORT_SEC); return true;
      case 'chk_lb_hairpin': resultAction(OFTABLE.CHK_LB_HAIRPIN, MLF.LOOKUP_LB_HAIRPIN); return true;
      case 'chk_lb_hairpin_reply': resultAction(OFTABLE.CHK_LB_HAIRPIN_REPLY, MLF.LOOKUP_LB_HAIRPIN); return true;
      case 'chk_lb_aff': resultAction(OFTABLE.CHK_LB_AFFINITY, MLF.USE_LB_AFF_SESSION); return true;
      case 'chk_ecmp_nh_mac': resultAction(OFTABLE.ECMP_NH_MAC, MLF.LOOKUP_COMMIT_ECMP_NH); return true;
      case 'chk_ecmp_nh': resultAction(OFTABLE.ECMP_NH, MLF.LOOKUP_COMMIT_ECMP_NH); return true;
      case 'lookup_arp': case 'lookup_nd': {
        const v6 = name === 'lookup_nd';
        const dst = result(1);
        this.advance();
        this.withArgs(out, this.bindingArgs(v6), () => [
          { kind: 'set_field', field: LOG_REG.FLAGS, value: 0n, mask: 1n << BigInt(MLF.LOOKUP_MAC) },
          { kind: 'resubmit', table: OFTABLE.MAC_LOOKUP },
          { kind: 'move', src: flagsBit(MLF.LOOKUP_MAC), dst },
        ]);
        return true;
      }
      case 'lookup_arp_ip': case 'lookup_nd_ip': {
        const v6 = name === 'lookup_nd_ip';
        const dst = result(1);
        this.advance();
        const [port, ip] = this.argFields([0, v6 ? 128 : 32]) as [FieldRef, FieldRef];
        const args = [{ src: port, dst: reg(LOG_REG.OUTPORT) }, { src: ip, dst: ipArgReg(v6) }];
        this.withArgs(out, args, () => [
          { kind: 'push', src: reg('eth_dst', 0, 47) },
          { kind: 'set_field', field: LOG_REG.FLAGS, value: 0n, mask: 1n << BigInt(MLF.LOOKUP_MAC) },
          { kind: 'resubmit', table: OFTABLE.MAC_BINDING },
          { kind: 'move', src: flagsBit(MLF.LOOKUP_MAC), dst },
          { kind: 'pop', dst: reg('eth_dst', 0, 47) },
        ]);
        return true;
      }
      case 'get_fdb': {
        if (lhs.nBits !== 0) this.typeCheck(lhs, 32, true, scope);
        else this.typeCheck(lhs, 0, true, scope);
        const dst = this.resolve(lhs);
        this.advance();
        this.forceMatch('(');
        const mac = this.argField(48);
        this.forceMatch(')');
        this.withArgs(out, [{ src: mac, dst: reg('eth_dst', 0, 47) }], () => [
          { kind: 'set_field', field: LOG_REG.OUTPORT, value: 0n },
          { kind: 'resubmit', table: OFTABLE.GET_FDB },
        ]);
        if (dst.field !== LOG_REG.OUTPORT) out.push({ kind: 'move', src: reg(LOG_REG.OUTPORT), dst });
        return true;
      }
      case 'lookup_fdb': {
        const dst = result(1);
        this.advance();
        const [port, mac] = this.argFields([0, 48]) as [FieldRef, FieldRef];
        // Unlike lookup_arp, OVN restores the arguments before reading the result bit.
        this.withArgs(out, [{ src: port, dst: reg(LOG_REG.INPORT) }, { src: mac, dst: reg('eth_src', 0, 47) }], () => [
          { kind: 'set_field', field: LOG_REG.FLAGS, value: 0n, mask: 1n << BigInt(MLF.LOOKUP_FDB) },
          { kind: 'resubmit', table: OFTABLE.LOOKUP_FDB },
        ]);
        out.push({ kind: 'move', src: flagsBit(MLF.LOOKUP_FDB), dst });
        return true;
      }
      case 'dns_lookup': {
        this.advance();
        this.forceMatch('(');
        if (!this.match(')')) this.fail("dns_lookup doesn't take any parameters");
        const dst = result(1);
        this.prereqs.push('udp');
        const header = oxmHeader(dst.field);
        if (header === null) this.fail(`dns_lookup cannot store its result in ${dst.field}.`);
        out.push(this.controller(ACTION_OPCODE.DNS_LOOKUP, [...header, ...be32(dst.start)], true));
        return true;
      }
      case 'put_dhcp_opts': {
        const dst = result(1);
        this.advance();
        this.advance();
        out.push(this.parsePutDhcpOpts(dst));
        return true;
      }
      case 'put_dhcpv6_opts': {
        const dst = result(1);
        this.advance();
        this.advance();
        out.push(this.parsePutDhcpv6Opts(dst));
        return true;
      }
      case 'put_nd_ra_opts': {
        const dst = result(1);
        this.advance();
        this.advance();
        out.push(this.parsePutNdRaOpts(dst));
        return true;
      }
      case 'select': out.push(this.parseSelect(lhs, scope)); return true;
      default:
        return false;
    }
  }

  /**
   * `lhs = select(id[=weight], ...)` as parse_select_action reads it, at `select`: the result
   * writable and at least 16 bits wide, not in the last table; ids and weights 16-bit decimals,
   * a weight of 0 refused and a missing one 100, commas optional (a trailing one too), two
   * members at least. Encoded as encode_SELECT (see select.ts): `group:N`.
   */
  private parseSelect(lhs: ActionField, scope: WriteScope): OfAction {
    this.typeCheck(lhs, lhs.nBits, true, scope);
    if (lhs.nBits < 16) {
      this.fail(`cannot use ${lhs.nBits}-bit field ${lhs.symbol.name}[${lhs.ofs}..${lhs.ofs + lhs.nBits - 1}] `
        + 'for "select", which requires at least 16 bits.');
    }
    this.checkNotLast('select');
    const dst = this.resolve(lhs);
    this.advance();
    this.advance();
    const members: SelectMember[] = [];
    // Each turn takes an id or fails, so the loop ends within the tokens.
    while (!this.match(')')) {
      const id = this.forceUint16('id');
      let weight = selectWeightDefault;
      if (this.match('=')) {
        weight = this.forceUint16('weight');
        if (weight === 0) this.syntaxError("weight can't be 0");
      }
      this.match(',');
      members.push({ id, weight });
    }
    if (members.length < 2) this.syntaxError('expecting at least 2 group members');
    const nextTable = this.firstTable(this.ctx.pipeline) + this.ctx.table + 1;
    const result = { ovsName: ovsFieldName(dst.field), start: dst.start, end: dst.end };
    return this.useGroup('select', selectGroupDescription(members, result, nextTable, this.ctx.dpHashL4Sym === true));
  }

  private parsePutDhcpOpts(dst: FieldRef): OfAction {
    const options = this.parseDhcpOptionList(this.ctx.dhcpOpts ?? defaultDhcpOpts, 'DHCPv4');
    const offer = options.find((o) => o.opt.code === dhcpOffererIpCode);
    if (offer === undefined) this.fail('put_dhcp_opts requires offerip to be specified.');
    const header = oxmHeader(dst.field);
    if (header === null) this.fail(`put_dhcp_opts cannot store its result in ${dst.field}.`);
    const rest = encodeDhcpOptions(options);
    if (typeof rest === 'string') this.fail(rest);
    const offerIp = offer.value.kind === 'ints' ? (offer.value.values[0]?.value ?? 0n) : 0n;
    const args = [...header, ...be32(dst.start), ...be32(Number(offerIp & 0xffffffffn)), ...rest];
    return this.controller(ACTION_OPCODE.PUT_DHCP_OPTS, args, true);
  }

  /** put_dhcpv6_opts: the result field, then the options' TLVs in the order written (none is required). */
  private parsePutDhcpv6Opts(dst: FieldRef): OfAction {
    const options = this.parseDhcpOptionList(this.ctx.dhcpv6Opts ?? defaultDhcpv6Opts, 'DHCPv6');
    const header = oxmHeader(dst.field);
    if (header === null) this.fail(`put_dhcpv6_opts cannot store its result in ${dst.field}.`);
    const rest = encodeDhcpv6Options(options);
    if (typeof rest === 'string') this.fail(rest);
    return this.controller(ACTION_OPCODE.PUT_DHCPV6_OPTS, [...header, ...be32(dst.start), ...rest], true);
  }

  /**
   * put_nd_ra_opts: the result field, then the whole Router Advertisement the options make
   * (agent/actions/nd-ra.ts), which pinctrl puts in place of the Router Solicitation.
   */
  private parsePutNdRaOpts(dst: FieldRef): OfAction {
    const options = this.parseDhcpOptionList(ndRaOpts, 'IPv6 ND RA');
    const bad = checkNdRaOptions(options);
    if (bad !== undefined) this.fail(bad);
    this.prereqs.push('ip6');
    const header = oxmHeader(dst.field);
    if (header === null) this.fail(`put_nd_ra_opts cannot store its result in ${dst.field}.`);
    return this.controller(ACTION_OPCODE.PUT_ND_RA_OPTS, [...header, ...be32(dst.start), ...encodeNdRa(options)], true);
  }

  /**
   * `name = value, ...)` after put_dhcp_opts(, put_dhcpv6_opts( or put_nd_ra_opts( (OVN's
   * parse_put_opts), and after trigger_event's event (`kind` is then the event's name).
   */
  private parseDhcpOptionList(table: ReadonlyMap<string, DhcpOpt>, kind: string): DhcpOption[] {
    const options: DhcpOption[] = [];
    while (!this.match(')')) {
      const t = this.tok;
      if (t.kind !== 'id') this.syntaxError();
      const opt = table.get(t.text);
      if (opt === undefined) this.syntaxError(`expecting ${kind} option name`);
      this.advance();
      this.forceMatch('=');
      const values: { value: bigint; mask: bigint | null; format: IntFormat }[] = [];
      let str: string | null = null;
      const one = (): void => {
        const c = this.tok;
        if (c.kind === 'integer') {
          if (str !== null) this.syntaxError('expecting string');
          values.push({ value: c.value, mask: c.mask, format: c.format });
        } else if (c.kind === 'string') {
          if (values.length > 0 || str !== null) this.syntaxError('expecting integer');
          str = c.value;
        } else {
          this.syntaxError('expecting constant');
        }
        this.advance();
      };
      if (this.match('{')) {
        while (!this.match('}')) {
          if (this.tok.kind === 'end') this.syntaxError("expecting `}'");
          one();
          this.match(',');
        }
      } else {
        one();
      }
      const isString = str !== null;
      if (opt.type !== 'host_id') {
        const wantsString = opt.type === 'str' || opt.type === 'domains';
        if (wantsString && !isString) this.fail(`${kind} option ${t.text} requires string value.`);
        if (!wantsString && isString) this.fail(`${kind} option ${t.text} requires numeric value.`);
      }
      if (!isString && values.length === 0) this.fail(`${kind} option ${t.text} has no value.`);
      options.push({ name: t.text, opt, value: str !== null ? { kind: 'string', value: str } : { kind: 'ints', values } });
      if (this.tok.kind === 'end') this.syntaxError("expecting `)'");
      this.match(',');
    }
    return options;
  }
}

const nestedOps: Readonly<Record<string, readonly [number, string | null]>> = {
  arp: [ACTION_OPCODE.ARP, 'ip4'],
  icmp4: [ACTION_OPCODE.ICMP, 'ip4'],
  icmp4_error: [ACTION_OPCODE.ICMP4_ERROR, 'ip4'],
  icmp6: [ACTION_OPCODE.ICMP, 'ip6'],
  icmp6_error: [ACTION_OPCODE.ICMP6_ERROR, 'ip6'],
  tcp_reset: [ACTION_OPCODE.TCP_RESET, 'tcp'],
  sctp_abort: [ACTION_OPCODE.SCTP_ABORT, 'sctp'],
  nd_na: [ACTION_OPCODE.ND_NA, 'nd_ns'],
  nd_na_router: [ACTION_OPCODE.ND_NA_ROUTER, 'nd_ns'],
  nd_ns: [ACTION_OPCODE.ND_NS, 'ip6'],
  reject: [ACTION_OPCODE.REJECT, null],
};

/** Compiles one flow's actions. Never throws for bad input. */
export function compileActions(text: string, ctx: ActionContext): ActionsResult {
  if (text.length > actionCharsMax) return { error: `Actions longer than ${actionCharsMax} characters.` };
  const lexed = lex(text);
  if ('error' in lexed) return { error: lexed.error.message };
  const c = new ActionCompiler(lexed.tokens, ctx);
  try {
    const actions = c.parseActions('end', 0, 'default');
    return { actions, prereqs: c.prereqs, groups: c.groups };
  } catch (e) {
    if (e instanceof Fail) return { error: e.message };
    throw e;
  }
}
