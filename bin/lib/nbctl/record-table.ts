// How ovn-nbctl prints records (list, find): a table with one row per record and one column per
// database column, laid out in one of the five output formats of Open vSwitch's table printer
// (--format=list|table|html|csv|json), its cells written in one of three data formats
// (--data=string|bare|json). Everything here is checked byte for byte against ovn-nbctl 23.03
// (tests/bin/nbctl-vs-ovn-nbctl.test.ts). Widths count UTF-8 bytes, as the C printer's strlen
// does, and the "is this a plain word" test knows ASCII letters only, as C's isalpha in the C
// locale does: so "é" is quoted and widens its column by two.
import { NbctlError, isUuid } from './nb.js';

export interface BaseTypeJson {
  type: string;
}
/** A column's type as the schema's JSON writes it (RFC 7047 <type>, the long form). */
export interface ColumnTypeJson {
  key: string | BaseTypeJson;
  value?: string | BaseTypeJson;
  min?: number;
  max?: number | 'unlimited';
}

export const baseName = (b: string | BaseTypeJson): string => (typeof b === 'string' ? b : b.type);
export const isMap = (t: ColumnTypeJson): boolean => t.value !== undefined;
/** At most one element: such a set (or map) is printed without its brackets when not empty. */
const holdsOneAtMost = (t: ColumnTypeJson): boolean => (t.max ?? 1) === 1;

export const outputFormats = ['list', 'table', 'html', 'csv', 'json'] as const;
export const dataFormats = ['string', 'bare', 'json'] as const;

export interface TableStyle {
  readonly format: (typeof outputFormats)[number];
  /** How a cell's datum becomes text; the json format ignores it and writes the datum itself. */
  readonly data: (typeof dataFormats)[number];
  readonly headings: boolean;
  /** --pretty: the json format (and only it) is indented. */
  readonly pretty: boolean;
  /** --max-column-width: cut the table format's columns to this many bytes; 0 is no limit. */
  readonly columnWidthMax: number;
}

export const defaultTableStyle: TableStyle = { format: 'list', data: 'string', headings: true, pretty: false, columnWidthMax: 0 };

/**
 * The style the global options ask for. Like getopt, the options act in the order given, so
 * "--bare --format=table" is a headless table of bare cells while "--format=table --bare" is a
 * list: --bare is shorthand for --format=list --data=bare --no-headings.
 */
export function tableStyle(flags: Iterable<string>): TableStyle {
  let style = defaultTableStyle;
  for (const f of flags) {
    const eq = f.indexOf('=');
    const name = eq < 0 ? f : f.slice(0, eq);
    const value = eq < 0 ? '' : f.slice(eq + 1);
    switch (name) {
      case '--format':
        if (!(outputFormats as readonly string[]).includes(value)) throw new NbctlError(`unknown output format "${value}"`);
        style = { ...style, format: value as TableStyle['format'] };
        break;
      case '--data':
        if (!(dataFormats as readonly string[]).includes(value)) throw new NbctlError(`unknown data format "${value}"`);
        style = { ...style, data: value as TableStyle['data'] };
        break;
      case '--no-headings':
        style = { ...style, headings: false };
        break;
      case '--pretty':
        style = { ...style, pretty: true };
        break;
      case '--bare':
        style = { ...style, format: 'list', data: 'bare', headings: false };
        break;
      case '--max-column-width':
        style = { ...style, columnWidthMax: atoi(value) };
        break;
      default:
        break;
    }
  }
  return style;
}

/** C's atoi: leading blanks, a sign and digits; anything else ends the number (none is 0). */
function atoi(s: string): number {
  const m = /^\s*([+-]?\d+)/.exec(s);
  return m === null ? 0 : Number(m[1]);
}

/** One cell: a column's value in a record (RFC 7047 JSON, as the server sent it) and its type. */
export interface Cell {
  readonly datum: unknown;
  readonly type: ColumnTypeJson;
}

export interface RecordTable {
  readonly headings: readonly string[];
  /** Each row has one cell per heading. */
  readonly rows: readonly (readonly Cell[])[];
}

/** The elements of a set, or the [key, value] pairs of a map; a bare atom is a set of one. */
function elementsOf(datum: unknown): unknown[] {
  if (Array.isArray(datum) && (datum[0] === 'set' || datum[0] === 'map')) return datum[1] as unknown[];
  return [datum];
}

/**
 * A datum as OVSDB's own JSON writes it: a set of one element is the element itself, and maps
 * stay maps. Elements keep the server's order, which is OVSDB's sorted order.
 */
export function datumJson(datum: unknown): unknown {
  if (Array.isArray(datum) && datum[0] === 'set' && (datum[1] as unknown[]).length === 1) return (datum[1] as unknown[])[0];
  return datum;
}

/**
 * Whether a string must be quoted to read back as itself: unless it is a plain word (an ASCII
 * letter or "_", then letters, digits, "_", "-", "."), or it would read as a boolean or a UUID.
 */
function needsQuotes(s: string): boolean {
  return !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(s) || s === 'true' || s === 'false' || isUuid(s);
}

/** An atom as ovs-vsctl's syntax writes it (ovn-nbctl's "string" data format). */
export function atomToString(atom: unknown): string {
  if (Array.isArray(atom) && atom[0] === 'uuid') return String(atom[1]);
  if (typeof atom === 'string') return needsQuotes(atom) ? JSON.stringify(atom) : atom;
  if (typeof atom === 'number') return numberText(atom);
  return String(atom);
}

/** An atom with no quoting at all (the "bare" data format). */
function atomToBare(atom: unknown): string {
  return typeof atom === 'string' ? atom : atomToString(atom);
}

/**
 * A whole value in ovs-vsctl's syntax: "[a, b]" for a set, "{k=v}" for a map; a column that holds
 * at most one element writes it without brackets, and an empty one as "[]" (or "{}").
 */
export function datumToString(datum: unknown, type: ColumnTypeJson): string {
  const map = isMap(type);
  const items = elementsOf(datum).map((e) => (map ? `${atomToString((e as unknown[])[0])}=${atomToString((e as unknown[])[1])}` : atomToString(e)));
  if (holdsOneAtMost(type) && items.length > 0) return items.join(', ');
  return map ? `{${items.join(', ')}}` : `[${items.join(', ')}]`;
}

/** A whole value as words separated by spaces, map entries as key=value, nothing quoted. */
export function datumToBare(datum: unknown, type: ColumnTypeJson): string {
  const map = isMap(type);
  return elementsOf(datum)
    .map((e) => (map ? `${atomToBare((e as unknown[])[0])}=${atomToBare((e as unknown[])[1])}` : atomToBare(e)))
    .join(' ');
}

function cellText(cell: Cell, data: TableStyle['data']): string {
  switch (data) {
    case 'string':
      return datumToString(cell.datum, cell.type);
    case 'bare':
      return datumToBare(cell.datum, cell.type);
    case 'json':
      return jsonText(datumJson(cell.datum), false);
  }
}

/**
 * A number as OVSDB prints it: an integer in full, a real as C's "%.15g" (15 significant
 * digits, trailing zeros dropped, an exponent below 1e-4 or from 1e15 on). A JS number does not
 * say which it was, so an integral one is printed as an integer: a real from 1e15 on would come
 * out in full where OVS writes an exponent (OVN_Northbound has no real column).
 */
export function numberText(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) <= Number.MAX_SAFE_INTEGER) return String(n);
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'nan' : n > 0 ? 'inf' : '-inf';
  const precision = 15;
  const [mantissa = '', exponentText = '0'] = n.toExponential(precision - 1).split('e');
  const exponent = Number(exponentText);
  const trim = (s: string): string => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  if (exponent < -4 || exponent >= precision) {
    return `${trim(mantissa)}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return trim(n.toFixed(precision - 1 - exponent));
}

/**
 * JSON as OVS writes it: object members sorted by name, numbers as numberText; with `pretty`,
 * every member and element on its own line, indented two spaces a level, and closing brackets
 * right after the last element rather than on a line of their own.
 */
export function jsonText(v: unknown, pretty: boolean, depth = 0): string {
  const newline = (d: number): string => (pretty ? `\n${' '.repeat(2 * d)}` : '');
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return numberText(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[${newline(depth + 1)}${v.map((e) => jsonText(e, pretty, depth + 1)).join(`,${newline(depth + 1)}`)}]`;
  }
  const names = Object.keys(v as object).sort();
  const members = names.map((k) => `${JSON.stringify(k)}:${pretty ? ' ' : ''}${jsonText((v as Record<string, unknown>)[k], pretty, depth + 1)}`);
  return `{${newline(depth + 1)}${members.join(`,${newline(depth + 1)}`)}}`;
}

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * printf's "%-W.Ws": at most W bytes, then spaces up to W. A cut that would split a character
 * backs off to the character's start, where C would print the partial bytes.
 */
function fitBytes(s: string, width: number): string {
  let out = s;
  if (bytes(out) > width) {
    const buf = Buffer.from(out, 'utf8');
    let end = width;
    while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
    out = buf.subarray(0, end).toString('utf8');
  }
  return out + ' '.repeat(Math.max(0, width - bytes(out)));
}

/** A line of the table and csv formats: trailing spaces go, even those of the last cell. */
const finishLine = (s: string): string => `${s.replace(/ +$/, '')}\n`;

function formatAsTable(t: RecordTable, texts: string[][], style: TableStyle): string {
  const widths = t.headings.map((heading, x) => {
    let w = Math.max(0, ...texts.map((row) => bytes(row[x] ?? '')));
    if (style.columnWidthMax > 0) w = Math.min(w, style.columnWidthMax);
    return style.headings ? Math.max(w, bytes(heading)) : w;
  });
  let out = '';
  if (style.headings) {
    out += finishLine(t.headings.map((h, x) => fitBytes(h, widths[x] ?? 0)).join(' '));
    out += finishLine(widths.map((w) => '-'.repeat(w)).join(' '));
  }
  for (const row of texts) out += finishLine(row.map((s, x) => fitBytes(s, widths[x] ?? 0)).join(' '));
  return out;
}

function formatAsList(t: RecordTable, texts: string[][], style: TableStyle): string {
  return texts
    .map((row) => row.map((s, x) => `${style.headings ? `${(t.headings[x] ?? '').padEnd(20)}: ` : ''}${s}\n`).join(''))
    .join('\n');
}

/** A CSV field, quoted (quotes doubled) when it holds a comma, a quote or a newline. */
const csvField = (s: string): string => (/[\n",]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

function formatAsCsv(t: RecordTable, texts: string[][], style: TableStyle): string {
  const lines = style.headings ? [t.headings, ...texts] : texts;
  return lines.map((row) => `${row.map(csvField).join(',')}\n`).join('');
}

const htmlEscape = (s: string): string => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

/** An HTML cell in which every UUID becomes a link to its record's anchor, shown by its first 8 digits. */
function htmlCell(element: string, content: string): string {
  const uuid = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;
  let body = '';
  let at = 0;
  for (const m of content.matchAll(uuid)) {
    body += htmlEscape(content.slice(at, m.index)) + `<a href="#${m[0]}">${m[0].slice(0, 8)}</a>`;
    at = m.index + m[0].length;
  }
  return `    <${element}>${body}${htmlEscape(content.slice(at))}</${element}>\n`;
}

function formatAsHtml(t: RecordTable, texts: string[][], style: TableStyle): string {
  let out = '<table border=1>\n';
  if (style.headings) out += `  <tr>\n${t.headings.map((h) => htmlCell('th', h)).join('')}  </tr>\n`;
  for (const row of texts) {
    out += '  <tr>\n';
    row.forEach((s, x) => {
      // The _uuid column is each record's anchor, which the other cells' UUIDs link to.
      out += t.headings[x] === '_uuid' ? `    <td><a name="${htmlEscape(s)}">${htmlEscape(s.slice(0, 8))}</a></td>\n` : htmlCell('td', s);
    });
    out += '  </tr>\n';
  }
  return `${out}</table>\n`;
}

/** The whole table in the given style, as ovn-nbctl prints one command's table. */
export function formatRecordTable(t: RecordTable, style: TableStyle): string {
  if (style.format === 'json') {
    // The json format writes each cell's datum, whatever --data says.
    return `${jsonText({ data: t.rows.map((row) => row.map((c) => datumJson(c.datum))), headings: t.headings }, style.pretty)}\n`;
  }
  const texts = t.rows.map((row) => row.map((c) => cellText(c, style.data)));
  switch (style.format) {
    case 'list':
      return formatAsList(t, texts, style);
    case 'table':
      return formatAsTable(t, texts, style);
    case 'csv':
      return formatAsCsv(t, texts, style);
    case 'html':
      return formatAsHtml(t, texts, style);
  }
}
