// The order in which ovn-nbctl prints a string map with SMAP_FOR_EACH (lr-policy-list's options,
// dhcp-options-get-options): the IDL fills an smap from the column's keys in sorted order, and an
// smap is an OVS hmap keyed by hash_string(key, 0), so the printed order is its bucket order
// (replayed by northd/ovs-hash.ts).
import { hmapOrder } from '../../../northd/ovs-hash.js';

/** The entries of a map column in SMAP_FOR_EACH order. */
export function smapOrder<T>(pairs: readonly (readonly [string, T])[]): [string, T][] {
  const sorted = [...pairs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return hmapOrder(sorted, ([key]) => key).map(([key, value]) => [key, value]);
}
