// Invariants every committed OVSDB database satisfies, checked on a JSON dump against the
// schema, independently of the engine's own code: every value fits its column type, every
// reference (strong or weak) points to an existing row of the right table, every non-root row
// is referenced strongly by another row, unique indexes hold and maxRows holds.
import type { BaseTypeLite, ColumnTypeLite, DbDump, Json, SchemaLite } from './ovsdb-json.js';
import { asciiJson, canonicalJson, isMapType, mapPairs, setElements } from './ovsdb-json.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function atomProblem(base: BaseTypeLite, atom: Json, dump: DbDump): string | undefined {
  switch (base.type) {
    case 'integer':
      if (typeof atom !== 'number' || !Number.isInteger(atom)) return 'not an integer';
      if (base.minInteger !== undefined && atom < base.minInteger) return `below minInteger ${base.minInteger}`;
      if (base.maxInteger !== undefined && atom > base.maxInteger) return `above maxInteger ${base.maxInteger}`;
      break;
    case 'real':
      if (typeof atom !== 'number' || !Number.isFinite(atom)) return 'not a finite real';
      if (base.minReal !== undefined && atom < base.minReal) return `below minReal ${base.minReal}`;
      if (base.maxReal !== undefined && atom > base.maxReal) return `above maxReal ${base.maxReal}`;
      break;
    case 'boolean':
      if (typeof atom !== 'boolean') return 'not a boolean';
      break;
    case 'string': {
      if (typeof atom !== 'string') return 'not a string';
      const length = [...atom].length;
      if (base.minLength !== undefined && length < base.minLength) return `shorter than minLength ${base.minLength}`;
      if (base.maxLength !== undefined && length > base.maxLength) return `longer than maxLength ${base.maxLength}`;
      break;
    }
    case 'uuid': {
      if (!Array.isArray(atom) || atom[0] !== 'uuid' || typeof atom[1] !== 'string' || !UUID_PATTERN.test(atom[1])) return 'not a ["uuid", <lowercase uuid>] atom';
      if (base.refTable !== undefined && dump[base.refTable]?.[atom[1]] === undefined) {
        return `${base.refType} reference to missing ${base.refTable} row ${atom[1]}`;
      }
      break;
    }
  }
  if (base.enum !== undefined && !base.enum.some((e) => canonicalJson(e) === canonicalJson(atom))) return 'not in its enum';
  return undefined;
}

function datumProblems(type: ColumnTypeLite, datum: Json, dump: DbDump): string[] {
  const problems: string[] = [];
  let atoms: Json[];
  let keys: Json[];
  if (isMapType(type)) {
    if (!Array.isArray(datum) || datum[0] !== 'map') return ['not a map datum'];
    const pairs = mapPairs(datum);
    keys = pairs.map(([k]) => k);
    for (const [k, v] of pairs) {
      const kp = atomProblem(type.key, k, dump);
      const vp = atomProblem(type.value as BaseTypeLite, v, dump);
      if (kp !== undefined) problems.push(`key ${asciiJson(k)}: ${kp}`);
      if (vp !== undefined) problems.push(`value ${asciiJson(v)}: ${vp}`);
    }
    atoms = keys;
  } else {
    atoms = setElements(datum);
    keys = atoms;
    for (const a of atoms) {
      const p = atomProblem(type.key, a, dump);
      if (p !== undefined) problems.push(`${asciiJson(a)}: ${p}`);
    }
  }
  if (atoms.length < type.min || atoms.length > type.max) problems.push(`${atoms.length} elements, outside [${type.min}, ${type.max}]`);
  if (new Set(keys.map((k) => canonicalJson(k))).size !== keys.length) problems.push('repeated element or key');
  return problems;
}

/** Every violated invariant, as readable lines (empty when the dump is consistent). */
export function checkInvariants(schema: SchemaLite, dump: DbDump): string[] {
  const problems: string[] = [];
  const strongReferrers = new Map<string, number>();
  for (const table of schema.tables.values()) {
    const rows = dump[table.name] ?? {};
    for (const [uuid, row] of Object.entries(rows)) {
      if (!UUID_PATTERN.test(uuid)) problems.push(`${table.name}: bad row UUID ${uuid}`);
      const version = row['_version'];
      if (!Array.isArray(version) || version[0] !== 'uuid') problems.push(`${table.name} ${uuid}: no _version`);
      for (const column of table.columns.values()) {
        const datum = row[column.name];
        if (datum === undefined) {
          problems.push(`${table.name} ${uuid}: column ${column.name} missing`);
          continue;
        }
        for (const p of datumProblems(column.type, datum, dump)) problems.push(`${table.name} ${uuid} ${column.name}: ${p}`);
        for (const [base, atoms] of [
          [column.type.key, isMapType(column.type) ? mapPairs(datum).map(([k]) => k) : setElements(datum)],
          [column.type.value, isMapType(column.type) ? mapPairs(datum).map(([, v]) => v) : []],
        ] as const) {
          if (base?.refTable === undefined || base.refType !== 'strong') continue;
          for (const atom of atoms) {
            const target = Array.isArray(atom) ? atom[1] : undefined;
            if (typeof target === 'string' && target !== uuid) strongReferrers.set(target, (strongReferrers.get(target) ?? 0) + 1);
          }
        }
      }
      for (const name of Object.keys(row)) {
        if (name !== '_uuid' && name !== '_version' && !table.columns.has(name)) problems.push(`${table.name} ${uuid}: unknown column ${name}`);
      }
    }
    const count = Object.keys(rows).length;
    if (count > table.maxRows) problems.push(`${table.name}: ${count} rows, maxRows ${table.maxRows}`);
    for (const index of table.indexes) {
      const seen = new Map<string, string>();
      for (const [uuid, row] of Object.entries(rows)) {
        const key = canonicalJson(index.map((c) => row[c] ?? null));
        const other = seen.get(key);
        if (other !== undefined) problems.push(`${table.name}: rows ${other} and ${uuid} share index [${index.join(', ')}] value ${asciiJson(JSON.parse(key))}`);
        seen.set(key, uuid);
      }
    }
  }
  for (const table of schema.tables.values()) {
    if (table.isRoot) continue;
    for (const uuid of Object.keys(dump[table.name] ?? {})) {
      if ((strongReferrers.get(uuid) ?? 0) === 0) problems.push(`${table.name} ${uuid}: non-root row without a strong reference (should have been collected)`);
    }
  }
  return problems;
}
