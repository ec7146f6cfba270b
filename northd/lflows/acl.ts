// ACL flows in ovn-northd 23.03's exact spelling (northd.c, v23.03.1): the default flows of the
// pre-ACL, ACL-hint and ACL stages a switch gets from its ACL state (none / stateless /
// stateful: an allow-related ACL applies), and each ACL's own flows (consider_acl and the
// stateless filters of allow-stateless ACLs).
//
// Registers (northd.c): reg0[0] conntrack defrag, reg0[1] commit, reg0[7..10] ACL hints
// (allow-new, allow, drop, block), reg0[13] label, reg0[16] stateless, reg0[17] allow-related
// reply, reg3 the ACL label.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { AclFacts } from '../acls.js';
import type { DropActions } from '../drop-sampling.js';
import { stage as stageOf } from '../stages.js';
import type { StageName } from '../stages.js';
import type { FlowHints } from './flow.js';
import { StageIds, lflow } from './flow.js';

/** The ACL and load balancer state a switch's default flows depend on. */
export interface AclFlags {
  readonly hasAcls: boolean;
  /** An allow-related ACL applies (ovn-northd's od->has_stateful_acl). */
  readonly hasStateful: boolean;
  /** A load balancer with VIPs applies (od->has_lb_vip): conntrack is used as for stateful ACLs. */
  readonly hasLbVip?: boolean;
  /** NB_Global options:default_acl_drop (acls.ts SwitchGlobals); absent: false. */
  readonly defaultDrop?: boolean;
  /** NB_Global options:use_ct_inv_match; absent: true. */
  readonly ctInvMatch?: boolean;
}

export const NO_ACL_FLAGS: AclFlags = Object.freeze({ hasAcls: false, hasStateful: false, hasLbVip: false });

const ND_MLD_ACL = 'nd || nd_ra || nd_rs || mldv1 || mldv2';

type Emit = (stage: StageName, priority: number, match: string, actions: string) => void;

/** The default flows of the ACL stages of a switch, by its ACL state (both directions); `drops`: the drop action texts. */
export function aclStageDefaults(f: Emit, flags: AclFlags, drops: DropActions): void {
  const { hasAcls, hasStateful } = flags;
  const hasLbVip = flags.hasLbVip === true;
  const inv = flags.ctInvMatch !== false;
  // What no ACL allows: passed on, or with default_acl_drop dropped (once a switch has ACLs).
  const byDefault = flags.defaultDrop === true ? drops.drop : 'next;';
  // Load balancers need the ACL stages' conntrack handling as stateful ACLs do (has_stateful).
  const connTracked = hasStateful || hasLbVip;
  f('ls_in_pre_acl', 110, 'eth.dst == $svc_monitor_mac', 'next;');
  f('ls_in_pre_acl', 0, '1', 'next;');
  f('ls_out_pre_acl', 110, 'eth.src == $svc_monitor_mac', 'next;');
  f('ls_out_pre_acl', 0, '1', 'next;');
  if (hasStateful) {
    for (const s of ['ls_in_pre_acl', 'ls_out_pre_acl'] as const) {
      f(s, 110, 'nd || nd_rs || nd_ra || mldv1 || mldv2 || (udp && udp.src == 546 && udp.dst == 547)', 'next;');
      f(s, 110, 'eth.mcast', 'next;');
      f(s, 100, 'ip', 'reg0[0] = 1; next;');
    }
  }
  for (const s of ['ls_in_acl_hint', 'ls_out_acl_hint'] as const) {
    f(s, hasAcls || hasLbVip ? 0 : 65535, '1', 'next;');
    if (!connTracked) continue;
    f(s, 7, 'ct.new && !ct.est', 'reg0[7] = 1; reg0[9] = 1; next;');
    f(s, 6, '!ct.new && ct.est && !ct.rpl && ct_mark.blocked == 1', 'reg0[7] = 1; reg0[9] = 1; next;');
    f(s, 5, '!ct.trk', 'reg0[8] = 1; reg0[9] = 1; next;');
    f(s, 4, '!ct.new && ct.est && !ct.rpl && ct_mark.blocked == 0', 'reg0[8] = 1; reg0[10] = 1; next;');
    f(s, 3, '!ct.est', 'reg0[9] = 1; next;');
    f(s, 2, 'ct.est && ct_mark.blocked == 1', 'reg0[9] = 1; next;');
    f(s, 1, 'ct.est && ct_mark.blocked == 0', 'reg0[10] = 1; next;');
  }
  if (!hasAcls && !hasLbVip) {
    f('ls_in_acl', 65535, '1', 'next;');
    f('ls_out_acl', 65535, '1', 'next;');
  } else {
    f('ls_in_acl', 0, '1', hasAcls ? byDefault : 'next;');
    f('ls_out_acl', 0, '1', hasAcls ? byDefault : 'next;');
  }
  f('ls_in_acl_after_lb', 0, '1', hasAcls ? byDefault : 'next;');
  if (connTracked) {
    for (const s of ['ls_in_acl', 'ls_out_acl'] as const) {
      f(s, 1, 'ip && ct.est && ct_mark.blocked == 1', 'reg0[1] = 1; next;');
      f(s, 1, 'ip && !ct.est', flags.defaultDrop === true ? drops.drop : 'reg0[1] = 1; next;');
      f(s, 65532, `${inv ? 'ct.inv || ' : ''}(ct.est && ct.rpl && ct_mark.blocked == 1)`, drops.drop);
    }
    const reply = `ct.est && !ct.rel && !ct.new${inv ? ' && !ct.inv' : ''} && ct.rpl && ct_mark.blocked == 0`;
    f('ls_in_acl', 65532, reply, 'reg0[9] = 0; reg0[10] = 0; reg0[17] = 1; next;');
    f('ls_out_acl', 65532, reply, 'next;');
    const related = `!ct.est && ct.rel && !ct.new${inv ? ' && !ct.inv' : ''} && ct_mark.blocked == 0`;
    f('ls_in_acl', 65532, related, 'reg0[17] = 1; ct_commit_nat;');
    f('ls_out_acl', 65532, related, 'ct_commit_nat;');
    f('ls_in_acl_after_lb', 65532, 'reg0[17] == 1', 'next;');
  }
  f('ls_in_acl', 65532, ND_MLD_ACL, 'next;');
  f('ls_out_acl', 65532, ND_MLD_ACL, 'next;');
  f('ls_in_acl_after_lb', 65532, ND_MLD_ACL, 'next;');
  if (hasAcls || hasLbVip) {
    f('ls_in_acl', 34000, 'eth.dst == $svc_monitor_mac', 'next;');
    f('ls_out_acl', 34000, 'eth.src == $svc_monitor_mac', 'next;');
  }
}

/** The log() action of an ACL with log=true (build_acl_log), or nothing. */
function aclLog(a: AclFacts): string {
  if (!a.log) return '';
  const parts: string[] = [];
  if (a.name !== undefined) parts.push(`name="${a.name}"`);
  parts.push(`severity=${a.severity ?? 'info'}`);
  parts.push(`verdict=${a.action === 'drop' ? 'drop' : a.action === 'reject' ? 'reject' : 'allow'}`);
  if (a.meter !== undefined) parts.push(`meter="${a.meter}"`);
  return `log(${parts.join(', ')}); `;
}

function aclStage(a: AclFacts): StageName {
  if (a.direction === 'from-lport') return a.options.get('apply-after-lb') === 'true' ? 'ls_in_acl_after_lb' : 'ls_in_acl';
  return 'ls_out_acl';
}

/** A reject ACL's flow (build_reject_acl_rules): the reply is sent back through the other pipeline. */
function rejectFlow(ld: readonly Uuid[], a: AclFacts, stage: StageName, extraMatch: string, extraActions: string, hint: FlowHints): sb.Logical_Flow {
  const ingress = stageOf(stage).pipeline === 'ingress';
  const next = ingress ? `next(pipeline=egress,table=${stageOf('ls_out_qos_mark').table});` : `next(pipeline=ingress,table=${stageOf('ls_in_l2_lkup').table});`;
  const match = `${extraMatch !== '' ? `(${extraMatch}) && ` : ''}${a.match}`;
  const actions = `${aclLog(a)}${extraActions !== '' ? `${extraActions} ` : ''}reg0 = 0; reject { /* eth.dst <-> eth.src; ip.dst <-> ip.src; is implicit. */ outport <-> inport; ${next} };`;
  return lflow(ld, stage, a.priority + 1000, match, actions, hint);
}

/**
 * The flows of one ACL on a switch whose state is `hasStateful` (consider_acl): a stateful ACL
 * or a load balancer with VIPs applies there (ovn-northd's has_stateful in build_acls).
 * `ctInvMatch`: NB_Global options:use_ct_inv_match; `drops`: the drop action texts (a drop
 * ACL's is the implicit one).
 */
export function aclFlows(ld: readonly Uuid[], a: AclFacts, hasStateful: boolean, ctInvMatch: boolean, drops: DropActions): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const hint: FlowHints = { hint: a.uuid, ids: new StageIds() };
  const stage = aclStage(a);
  const priority = a.priority + 1000;
  const add = (s: StageName, p: number, match: string, actions: string): void => {
    flows.push(lflow(ld, s, p, match, actions, hint));
  };
  const log = aclLog(a);
  const label = a.label !== 0 ? `reg0[13] = 1; reg3 = ${a.label}; ` : '';
  switch (a.action) {
    case 'allow-stateless':
      // Stateless filters take precedence over conntrack when the switch is stateful.
      if (hasStateful) add(a.direction === 'from-lport' ? 'ls_in_pre_acl' : 'ls_out_pre_acl', priority, a.match, 'reg0[16] = 1; next;');
      add(stage, priority, a.match, `${log}next;`);
      break;
    case 'allow':
    case 'allow-related':
      if (!hasStateful) {
        add(stage, priority, a.match, `${log}next;`);
        break;
      }
      add(stage, priority, `reg0[7] == 1 && (${a.match})`, `reg0[1] = 1; ${label}${log}next;`);
      add(stage, priority, `reg0[8] == 1 && (${a.match})`, `${label !== '' ? `reg0[1] = 1; ${label}` : ''}${log}next;`);
      if (a.log && a.label !== 0 && a.options.get('log-related') === 'true') {
        const related = stage === 'ls_out_acl' ? 'ls_in_acl' : 'ls_out_acl';
        const inv = ctInvMatch ? ' && !ct.inv' : '';
        add(related, 65533, `ct.est && !ct.rel && !ct.new${inv} && ct.rpl && ct_mark.blocked == 0 && ct_label.label == ${a.label}`, `${log}next;`);
        add(related, 65533, `!ct.est && ct.rel && !ct.new${inv} && ct_mark.blocked == 0 && ct_label.label == ${a.label}`, `${log}next;`);
      }
      break;
    case 'drop':
    case 'reject': {
      const reject = a.action === 'reject';
      if (!hasStateful) {
        flows.push(reject ? rejectFlow(ld, a, stage, '', '', hint) : lflow(ld, stage, priority, a.match, `${log}${drops.implicit}`, hint));
        break;
      }
      // Not (yet) an established connection: drop or reject it.
      flows.push(reject ? rejectFlow(ld, a, stage, 'reg0[9] == 1', '', hint) : lflow(ld, stage, priority, `reg0[9] == 1 && (${a.match})`, `${log}${drops.implicit}`, hint));
      // An established connection the policy now refuses: mark it blocked, then drop or reject.
      const block = 'ct_commit { ct_mark.blocked = 1; }; ';
      flows.push(reject ? rejectFlow(ld, a, stage, 'reg0[10] == 1', block, hint) : lflow(ld, stage, priority, `reg0[10] == 1 && (${a.match})`, `${block}${log}${drops.implicit}`, hint));
      break;
    }
  }
  return flows;
}
