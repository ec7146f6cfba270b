// The fixture OVN's tests/test-ovn.c compiles its expression tests against: address sets set1..set4,
// port groups pg1 and pg_empty, the port → key table (eth0 5, eth1 6, LOCAL 0xfffe, lsp1..3
// 0x11..0x13; a port is "chassis resident" when it is in that table), and the test-only symbols.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompileContext } from '../../agent/expr/index.js';
import { buildSymtab, type ExprSymbol, type Symtab } from '../../agent/expr/symbols.js';
import { testsDir } from '../helpers/source-tree.js';

export const addressSets: Readonly<Record<string, readonly string[]>> = {
  set1: ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
  set2: ['::1', '::2', '::3'],
  set3: ['00:00:00:00:00:01', '00:00:00:00:00:02', '00:00:00:00:00:03'],
  set4: [],
};

export const portGroups: Readonly<Record<string, readonly string[]>> = {
  pg1: ['lsp1', 'lsp2', 'lsp3'],
  pg_empty: [],
};

export const ports: Readonly<Record<string, number>> = {
  eth0: 5, eth1: 6, LOCAL: 0xfffe, lsp1: 0x11, lsp2: 0x12, lsp3: 0x13,
};

/** OVN's symbol table plus test-ovn.c's negative-testing symbols (64-bit fields on xreg0). */
export function testSymtab(): Symtab {
  const t = new Map<string, ExprSymbol>(buildSymtab());
  const field = (name: string, prereqs: string | null): void => {
    t.set(name, { kind: 'field', name, width: 64, of: 'xreg0', level: 'ordinal', mustCrossproduct: false, prereqs });
  };
  field('bad_prereq', 'xyzzy');
  field('self_recurse', 'self_recurse != 0');
  field('mutual_recurse_1', 'mutual_recurse_2 != 0');
  field('mutual_recurse_2', 'mutual_recurse_1 != 0');
  return t;
}

export function testContext(symtab: Symtab = buildSymtab()): CompileContext {
  return {
    symtab,
    addressSet: (n) => addressSets[n],
    portGroup: (n) => portGroups[n],
    lookupPort: (n) => ports[n],
    isChassisResident: (p) => ports[p] !== undefined,
  };
}

export interface GoldenCase {
  readonly input: string;
  readonly expected: string;
  readonly line: number;
}

/** Reads "input => expected" lines (a line without "=>" expects itself); skips blanks and #. */
export function readGolden(name: string): GoldenCase[] {
  const text = readFileSync(join(testsDir, 'testdata/agent', name), 'utf8');
  const out: GoldenCase[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const at = line.indexOf(' => ');
    out.push({ input: at < 0 ? line : line.slice(0, at), expected: at < 0 ? line : line.slice(at + 4), line: i + 1 });
  });
  return out;
}

/** A small seeded PRNG (mulberry32) for generators: the same seed replays the same case. */
export class Prng {
  private s: number;

  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }

  u32(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let z = this.s;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return (z ^ (z >>> 14)) >>> 0;
  }

  /** An integer in [lo, hi], both inclusive (spans up to 2^32). */
  int(lo: number, hi: number): number {
    return lo + Math.floor((this.u32() / 0x1_0000_0000) * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Prng.pick: no items');
    return items[this.int(0, items.length - 1)] as T;
  }
}
