// The userdata of a trigger_event packet-in, after the action header, read back as pinctrl.c's
// pinctrl_handle_event and pinctrl_handle_empty_lb_backends_opts read it: the event type (32
// bits, big-endian), then options, each a 16-bit code, a 16-bit length and that many bytes
// (agent/actions/controller-event.ts writes them). Pure; never throws.
//
// Departures, for input our own compiler never makes: an option code empty_lb_backends does not
// have, or bytes that are not UTF-8, make the userdata malformed (ovn-controller aborts on the
// first and copies the second as they are); an option given twice keeps its last value, as there.

import { CONTROLLER_EVENT, EMPTY_LB_OPT } from '../actions/controller-event.js';

/** What an empty_lb_backends event names: the VIP ("IP", "IP:port", "[IPv6]:port"), its protocol and its Load_Balancer. */
export interface EmptyLbBackendsEvent {
  readonly vip: string;
  readonly protocol: string;
  readonly loadBalancer: string;
}

export type ControllerEventRead =
  | { readonly kind: 'empty_lb_backends'; readonly event: EmptyLbBackendsEvent }
  /** A type this agent has no handler for (ovn-controller ignores it too). */
  | { readonly kind: 'unknown_event'; readonly eventType: number }
  | { readonly kind: 'malformed'; readonly message: string };

const OPT_HEADER_BYTES = 4;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads `args`, the userdata after OVN's action header. */
export function readControllerEvent(args: Buffer): ControllerEventRead {
  if (args.length < 4) return { kind: 'malformed', message: 'event not present in the userdata' };
  const eventType = args.readUInt32BE(0);
  if (eventType !== CONTROLLER_EVENT.EMPTY_LB_BACKENDS) return { kind: 'unknown_event', eventType };
  const values = new Map<number, string>();
  // Each turn takes at least the 4 header bytes: the loop ends within args.length / 4 turns.
  for (let at = 4; at < args.length;) {
    if (args.length - at < OPT_HEADER_BYTES) return { kind: 'malformed', message: `option header cut short at byte ${at}` };
    const code = args.readUInt16BE(at);
    const size = args.readUInt16BE(at + 2);
    at += OPT_HEADER_BYTES;
    if (args.length - at < size) return { kind: 'malformed', message: `option ${code} of ${size} bytes cut short at ${args.length - at}` };
    if (code !== EMPTY_LB_OPT.VIP && code !== EMPTY_LB_OPT.PROTOCOL && code !== EMPTY_LB_OPT.LOAD_BALANCER) {
      return { kind: 'malformed', message: `unknown empty_lb_backends option ${code}` };
    }
    let text: string;
    try {
      text = utf8.decode(args.subarray(at, at + size));
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      return { kind: 'malformed', message: `option ${code} is not UTF-8` };
    }
    values.set(code, text);
    at += size;
  }
  const vip = values.get(EMPTY_LB_OPT.VIP);
  const protocol = values.get(EMPTY_LB_OPT.PROTOCOL);
  const loadBalancer = values.get(EMPTY_LB_OPT.LOAD_BALANCER);
  if (vip === undefined || protocol === undefined || loadBalancer === undefined) return { kind: 'malformed', message: 'missing lb parameters in userdata' };
  return { kind: 'empty_lb_backends', event: { vip, protocol, loadBalancer } };
}
