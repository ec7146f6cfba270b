// What the pinctrl tests share: the userdata our compiler puts in a controller() action, as the
// switch hands it back in a packet-in, and small value helpers.
import { compileActions } from '../../agent/actions/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { decodeActions, encodeActions } from '../../agent/openflow/actions.js';

const symtab = buildSymtab();

export const hex = (s: string): Buffer => Buffer.from(s.replace(/[^0-9a-f]/gi, ''), 'hex');
export const full = (bits: number): bigint => (1n << BigInt(bits)) - 1n;

/**
 * The userdata of the first controller() in `actions` compiled for a switch (or a router) table,
 * encoded and decoded again as the switch would hand it back.
 */
export function controllerUserdata(actions: string, options: { readonly table: number; readonly isSwitch: boolean }): Buffer {
  const r = compileActions(actions, { symtab, pipeline: 'ingress', table: options.table, isSwitch: options.isSwitch, lookupPort: () => 1 });
  if ('error' in r) throw new Error(r.error);
  const c = r.actions.find((a) => a.kind === 'controller' || a.kind === 'controller_op');
  if (c === undefined) throw new Error(`no controller action in ${actions}`);
  const [decoded] = decodeActions(encodeActions([c]));
  if (decoded?.kind !== 'controller') throw new Error('controller action did not round-trip');
  return Buffer.from(decoded.userdata);
}
