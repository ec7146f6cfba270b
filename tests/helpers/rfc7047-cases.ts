// The RFC 7047 conformance cases (tests/testdata/ovsdb/rfc7047-cases.json): their shape, the
// normal form in which replies and dumps are recorded from ovsdb-server and compared with
// ours, and the file's layout (one transaction per line, so reviews read as diffs).
import fs from 'node:fs';
import path from 'node:path';
import type { DbDump, Json, JsonRow } from './ovsdb-json.js';
import { canonicalJson, canonicalize } from './ovsdb-json.js';
import { testsDir } from './source-tree.js';

const TESTDATA = path.join(testsDir, 'testdata', 'ovsdb');
export const RFC7047_SCHEMA_PATH = path.join(TESTDATA, 'rfc7047-schema.json');
export const RFC7047_CASES_PATH = path.join(TESTDATA, 'rfc7047-cases.json');

export interface Rfc7047Case {
  readonly name: string;
  /** Transactions (each the transact params without the database name), run in order. */
  readonly txns: Json[][];
  /** Locks the client holds (for "assert"). */
  readonly locks?: string[];
  /** Milliseconds since each request arrived, for "wait" timeouts. */
  readonly elapsedMs?: number;
  /** A known, accepted difference from ovsdb-server: the case runs as a tap todo. */
  readonly todo?: string;
  /** Normalized replies from ovsdb-server, one per transaction. */
  expected?: Json[];
  /** Normalized database contents after the last transaction. */
  dump?: Json;
  /** ovsdb-server's error details, for the reader (never compared). */
  details?: string[];
}

export interface Rfc7047File {
  readonly comment: string[];
  readonly cases: Rfc7047Case[];
}

export function readRfc7047Cases(): Rfc7047File {
  return JSON.parse(fs.readFileSync(RFC7047_CASES_PATH, 'utf8')) as Rfc7047File;
}

/** JSON with non-ASCII escaped, so the file is stable across editors and byte-exact on disk. */
function line(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function formatRfc7047Cases(file: Rfc7047File): string {
  const list = (name: string, items: readonly unknown[]): string =>
    items.length === 0 ? `      ${line(name)}: []` : `      ${line(name)}: [\n${items.map((x) => `        ${line(x)}`).join(',\n')}\n      ]`;
  const cases = file.cases.map((c) => {
    const members: string[] = [`      "name": ${line(c.name)}`];
    if (c.todo !== undefined) members.push(`      "todo": ${line(c.todo)}`);
    if (c.locks !== undefined) members.push(`      "locks": ${line(c.locks)}`);
    if (c.elapsedMs !== undefined) members.push(`      "elapsedMs": ${line(c.elapsedMs)}`);
    members.push(list('txns', c.txns));
    if (c.expected !== undefined) members.push(list('expected', c.expected));
    if (c.dump !== undefined) {
      const tables = Object.entries(c.dump as Record<string, Json>).map(([t, rows]) => `        ${line(t)}: ${line(rows)}`);
      members.push(tables.length === 0 ? '      "dump": {}' : `      "dump": {\n${tables.join(',\n')}\n      }`);
    }
    if (c.details !== undefined && c.details.length > 0) members.push(list('details', c.details));
    return `    {\n${members.join(',\n')}\n    }`;
  });
  return `{\n  "comment": [\n${file.comment.map((x) => `    ${line(x)}`).join(',\n')}\n  ],\n  "cases": [\n${cases.join(',\n')}\n  ]\n}\n`;
}

/** Every UUID the case's operations spell out (atoms and explicit "uuid" members), lowercased. */
export function knownUuids(c: Rfc7047Case): Set<string> {
  // The all-zeros UUID is the default of a uuid column; it is the same on every server.
  const known = new Set<string>(['00000000-0000-0000-0000-000000000000']);
  const walk = (v: Json): void => {
    if (Array.isArray(v)) {
      if (v.length === 2 && v[0] === 'uuid' && typeof v[1] === 'string') known.add(v[1].toLowerCase());
      v.forEach(walk);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, inner] of Object.entries(v)) {
        if (k === 'uuid' && typeof inner === 'string') known.add(inner.toLowerCase());
        walk(inner);
      }
    }
  };
  c.txns.forEach((t) => walk(t));
  return known;
}

/**
 * Normalizes the replies and final dump of one case run. UUIDs the case did not spell out
 * (chosen by the server) become "<new1>", "<new2>"... and _version values "<v1>", "<v2>"...,
 * numbered by first appearance, so equal placeholders mean equal values; select rows and
 * dump rows are sorted by their content with those values masked; error objects keep only
 * the error name.
 */
export class CaseNormalizer {
  private readonly newUuids = new Map<string, string>();
  private readonly versions = new Map<string, string>();

  constructor(private readonly known: ReadonlySet<string>) {}

  results(results: readonly Json[] | { blocked: number }): Json {
    if (!Array.isArray(results)) return results as Json;
    return results.map((r) => {
      if (r === null || typeof r !== 'object' || Array.isArray(r)) return r;
      if (typeof r['error'] === 'string') return { error: r['error'] };
      if (Array.isArray(r['rows'])) return { ...r, rows: this.rows(r['rows'] as JsonRow[]) };
      return this.substitute(r);
    });
  }

  /** The dump as table → rows sorted (with _uuid), every table present. */
  dump(dump: DbDump): Json {
    const out: Record<string, Json> = {};
    for (const table of Object.keys(dump).sort()) {
      const rows = Object.entries(dump[table] ?? {}).map(([uuid, row]) => ({ _uuid: ['uuid', uuid], ...row }) as JsonRow);
      if (rows.length > 0) out[table] = this.rows(rows);
    }
    return out;
  }

  private rows(rows: readonly JsonRow[]): Json[] {
    const keyed = rows.map((row) => ({ row, key: canonicalJson(this.mask(row)) }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return keyed.map(({ row }) => this.substitute(row));
  }

  private mask(value: Json): Json {
    if (Array.isArray(value)) {
      if (value.length === 2 && value[0] === 'uuid' && typeof value[1] === 'string') {
        return this.known.has(value[1]) ? value : ['uuid', this.newUuids.get(value[1]) ?? '<?>'];
      }
      return value.map((v) => this.mask(v));
    }
    if (value !== null && typeof value === 'object') {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(value)) out[k] = k === '_version' ? '<v>' : this.mask(v);
      return out;
    }
    return value;
  }

  private substitute(value: Json): Json {
    const walk = (v: Json, isVersion: boolean): Json => {
      if (Array.isArray(v)) {
        if (v.length === 2 && v[0] === 'uuid' && typeof v[1] === 'string') {
          if (isVersion) return ['uuid', this.placeholder(this.versions, v[1], 'v')];
          return this.known.has(v[1]) ? v : ['uuid', this.placeholder(this.newUuids, v[1], 'new')];
        }
        return v.map((x) => walk(x, false));
      }
      if (v !== null && typeof v === 'object') {
        const out: Record<string, Json> = {};
        for (const [k, inner] of Object.entries(v)) out[k] = walk(inner, k === '_version');
        return out;
      }
      return v;
    };
    return canonicalize(walk(value, false));
  }

  private placeholder(map: Map<string, string>, value: string, prefix: string): string {
    let p = map.get(value);
    if (p === undefined) {
      p = `<${prefix}${map.size + 1}>`;
      map.set(value, p);
    }
    return p;
  }
}
