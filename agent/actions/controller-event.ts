// trigger_event's events and their options, as OVN 23.03 defines them (include/ovn/logical-
// fields.h's enum ovn_controller_event, lib/ovn-l7.h's controller_event_opts), the checks
// lib/actions.c makes of the options (validate_empty_lb_backends), and their encoding in the
// controller() userdata after the action header: the event type (32 bits, big-endian), then each
// option in the order written as its code and length (16 bits each, big-endian) and its bytes.
// pinctrl reads it back (agent/pinctrl/controller-event.ts). Pure.

import assert from 'node:assert/strict';
import { spellsUuid } from '../../ovsdb/atom.js';
import type { DhcpOpt, DhcpOption } from './dhcp.js';
import { parseLbAddress } from './lb-key.js';

/** OVN_EVENT_*: the event types, as the userdata carries them. */
export const CONTROLLER_EVENT = {
  EMPTY_LB_BACKENDS: 0,
} as const;

/** The option codes of empty_lb_backends (EMPTY_LB_*). */
export const EMPTY_LB_OPT = {
  VIP: 1,
  PROTOCOL: 2,
  LOAD_BALANCER: 3,
} as const;

/** The event's name in trigger_event(event = "…") and in Controller_Event.event_type. */
export const EMPTY_LB_BACKENDS = 'empty_lb_backends';

export interface ControllerEventType {
  readonly code: number;
  /** The options trigger_event takes for it, by name; all of OVN's are strings. */
  readonly opts: ReadonlyMap<string, DhcpOpt>;
}

/** The events trigger_event names, by name. */
export const controllerEventTypes: ReadonlyMap<string, ControllerEventType> = new Map([
  [EMPTY_LB_BACKENDS, {
    code: CONTROLLER_EVENT.EMPTY_LB_BACKENDS,
    opts: new Map<string, DhcpOpt>([
      ['vip', { code: EMPTY_LB_OPT.VIP, type: 'str' }],
      ['protocol', { code: EMPTY_LB_OPT.PROTOCOL, type: 'str' }],
      ['load_balancer', { code: EMPTY_LB_OPT.LOAD_BALANCER, type: 'str' }],
    ]),
  }],
]);

/** OVN's limit on the event name's length (parse_trigger_event). */
export const eventNameBytesMax = 63;

const utf8 = new TextEncoder();

/**
 * The first option of an empty_lb_backends event that OVN refuses, as its error text, or
 * undefined. The VIP is read as load balancer keys are ("IP", "IP:port", "[IPv6]",
 * "[IPv6]:port"; OVN's inet_parse_active also takes a sign or spaces before the port, a lone
 * "[" and an IPv6 scope, which no VIP northd writes has); the UUID in either case.
 */
export function checkEmptyLbBackendsOptions(options: readonly DhcpOption[]): string | undefined {
  for (const o of options) {
    if (o.value.kind !== 'string') return `Invalid value for "${o.name}" option`;
    const s = o.value.value;
    switch (o.opt.code) {
      case EMPTY_LB_OPT.VIP:
        if (parseLbAddress(s) === undefined) return `Invalid load balancer VIP '${s}'`;
        break;
      case EMPTY_LB_OPT.PROTOCOL:
        if (s !== 'tcp' && s !== 'udp' && s !== 'sctp') return `Load balancer protocol '${s}' is not 'tcp', 'udp', or 'sctp'`;
        break;
      case EMPTY_LB_OPT.LOAD_BALANCER:
        if (!spellsUuid(s.toLowerCase())) return `Load balancer '${s}' is not a UUID`;
        break;
      default:
        break;
    }
  }
  return undefined;
}

/** The userdata after the action header: the event type, then each (string) option's code, length and bytes. */
export function encodeControllerEvent(type: number, options: readonly DhcpOption[]): number[] {
  const out = [(type >>> 24) & 0xff, (type >>> 16) & 0xff, (type >>> 8) & 0xff, type & 0xff];
  for (const o of options) {
    assert(o.value.kind === 'string', `trigger_event option ${o.name} is checked to be a string`);
    const bytes = utf8.encode(o.value.value);
    assert(bytes.length <= 0xffff, `trigger_event option ${o.name} fits a 16-bit length (actions are at most 64 KiB)`);
    out.push(o.opt.code >> 8, o.opt.code & 0xff, bytes.length >> 8, bytes.length & 0xff, ...bytes);
  }
  return out;
}
