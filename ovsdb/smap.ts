// Reading OVSDB string-to-string maps (options, other_config, external_ids) as Open vSwitch's
// smap_get_* do, for every part of ovnts that reads a setting OVN reads that way.

/** smap_get_uint: the whole value a decimal (strtoll's leading blanks and sign) in 0..2^32-1, else `def`. */
export function smapGetUint(options: ReadonlyMap<string, string>, key: string, def: number): number {
  const v = options.get(key);
  if (v === undefined || !/^[ \t\n\v\f\r]*[+-]?\d+$/.test(v)) return def;
  const n = Number(v.trim());
  return n >= 0 && n <= 0xffffffff ? n + 0 : def;
}
