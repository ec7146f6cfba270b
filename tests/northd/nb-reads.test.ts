// leadingMac: its fast path (an address already in OVN's spelling) against the general rule,
// a regular expression then normalization, on table cases and seeded random addresses.
// optionInt: table cases whose expected values come from OVS's str_to_int compiled with glibc.
import t from 'tap';
import { leadingMac, optionInt } from '../../northd/nb.js';
import { Rng } from '../helpers/seeded-rng.js';

/** The general rule alone: leading blanks, 1-2 hex digits per byte, not followed by hex or ':'. */
function reference(address: string): string | undefined {
  const m = /^\s*([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?![0-9a-fA-F:])/.exec(address);
  return m === null ? undefined : m.slice(1, 7).map((h) => h.toLowerCase().padStart(2, '0')).join(':');
}

t.test('table cases', async (t) => {
  const cases = ['0a:00:00:00:00:01', '0a:00:00:00:00:01 10.0.0.1', '0A:00:00:00:00:01 10.0.0.1', ' 0a:00:00:00:00:01', '0a:00:00:00:00:01\t10.0.0.1',
    '0a:00:00:00:00:01:02', '0a:00:00:00:00:0', '0:0:0:0:1:9', 'router', 'unknown', 'dynamic', '', '0a:00:00:00:00:0g', '0a-00-00-00-00-01'];
  for (const a of cases) t.equal(leadingMac(a), reference(a), JSON.stringify(a));
});

t.test('random addresses', async (t) => {
  const rng = new Rng(11);
  const alphabet = ['0', '1', '9', 'a', 'f', 'A', 'F', 'g', ':', ' ', '\t'];
  let differ = 0;
  let normal = 0;
  for (let i = 0; i < 20000; i++) {
    let a = '';
    // Mostly near-MAC shapes: pairs and separators, sometimes disturbed.
    const hex = ['0', '1', '9', 'a', 'f'];
    for (let b = 0; b < 6; b++) {
      a += rng.chance(0.9) ? rng.pick(hex) + rng.pick(hex) : rng.pick(alphabet) + rng.pick(alphabet);
      if (b < 5) a += rng.chance(0.95) ? ':' : rng.pick(alphabet);
    }
    if (rng.chance(0.5)) a += rng.pick([' 10.0.0.1', '', ':', 'x', '\t1']);
    if (leadingMac(a) !== reference(a)) differ++;
    if (/^([0-9a-f]{2}:){5}[0-9a-f]{2}( |$)/.test(a)) normal++;
  }
  t.equal(differ, 0);
  t.ok(normal > 1000, `${normal} addresses took the fast path`);
});

t.test('optionInt reads an integer option as smap_get_int does', async (t) => {
  // [value, result with default 77]: str_to_int's answers (strtoll base 10, whole string, C int).
  const cases: [string, number][] = [
    ['1400', 1400], [' 9000', 9000], ['\t+12', 12], ['9000 ', 77], ['0x10', 77], ['', 77], ['-5', -5], ['2147483647', 2147483647],
    ['2147483648', 77], ['-2147483648', -2147483648], ['-2147483649', 77], ['99999999999999999999', 77], ['12a', 77], ['+', 77],
    ['-0', 0], ['007', 7], ['\n\v\f\r 3', 3], ['1 2', 77], ['--1', 77], ['+-1', 77],
  ];
  for (const [text, want] of cases) t.equal(optionInt(new Map([['k', text]]), 'k', 77), want, JSON.stringify(text));
  t.equal(optionInt(new Map(), 'k', 77), 77, 'unset');
  t.ok(Object.is(optionInt(new Map([['k', '-0']]), 'k', 77), 0), '-0 reads as 0, printed "0"');
});
