// ovn-nbctl's QoS rule commands (qos-add, qos-del, qos-list, on a switch) and meter commands
// (meter-add, meter-del, meter-list), with ovn-nbctl 23.03's argument rules, messages and
// listings. QoS and Meter_Band rows are not roots: one dropped from its switch or meter is
// collected by the database.
import { scanInt64 } from './inet.js';
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, findRecord, isUuid, mapOf, optional, parseDirection, setOf, strcmp, text, uuidOf, uuidRef } from './nb.js';
import { parsePriority } from './router-commands.js';


const uint32Max = 4294967295n;

/** ovs_scan's "%"SCNd64 of `s` within [min, max], else undefined. */
function scanInRange(s: string, min: bigint, max: bigint): bigint | undefined {
  const v = scanInt64(s);
  return v === undefined || v < min || v > max ? undefined : v;
}

// --- QoS -----------------------------------------------------------------------------------

const findSwitch = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Switch', id, 'switch');

/** The switch's QoS rules, in the set's (UUID) order. */
async function qosRulesOf(nb: NbAccess, ls: RowJson): Promise<RowJson[]> {
  const ids = new Set(setOf(ls.qos_rules).map(text));
  if (ids.size === 0) return [];
  return (await nb.rows('QoS')).filter((q) => ids.has(uuidOf(q))).sort((a, b) => strcmp(uuidOf(a), uuidOf(b)));
}

/** ovn-nbctl's qos_cmp: from-lport first, priority descending, then match; 0 is "the same rule". */
function qosOrder(a: RowJson, b: RowJson): number {
  if (a.direction !== b.direction) return a.direction === 'from-lport' ? -1 : 1;
  if (a.priority !== b.priority) return Number(a.priority) > Number(b.priority) ? -1 : 1;
  return strcmp(String(a.match), String(b.match));
}

const mapValue = (v: unknown, key: string): string | undefined => {
  const e = mapOf(v).find(([k]) => text(k) === key);
  return e === undefined ? undefined : text(e[1]);
};

/** One line of qos-list: rate, burst and dscp, those the rule has. */
function qosLine(q: RowJson): string {
  let line = `${String(q.direction).padStart(10)} ${String(q.priority).padStart(5)} (${String(q.match)})`;
  const rate = mapValue(q.bandwidth, 'rate');
  const burst = mapValue(q.bandwidth, 'burst');
  const dscp = mapValue(q.action, 'dscp');
  if (rate !== undefined) line += ` rate=${rate}`;
  if (burst !== undefined) line += ` burst=${burst}`;
  if (dscp !== undefined) line += ` dscp=${dscp}`;
  return `${line}\n`;
}

/** qos-add's optional arguments and the ranges ovn-nbctl allows them. */
const qosLimits = { dscp: [0n, 63n], rate: [1n, uint32Max], burst: [1n, uint32Max] } as const;
type QosSetting = keyof typeof qosLimits;

/** qos-add's NAME=VALUE arguments, checked in the order given (a later one of a name wins). */
function qosSettings(args: readonly string[]): Partial<Record<QosSetting, bigint>> {
  const out: Partial<Record<QosSetting, bigint>> = {};
  for (const a of args) {
    const name = (Object.keys(qosLimits) as QosSetting[]).find((n) => a.startsWith(`${n}=`));
    if (name === undefined) throw new NbctlError(`${a}: supported arguments are "dscp=", "rate=", and "burst="`);
    const [min, max] = qosLimits[name];
    const value = a.slice(name.length + 1);
    const v = scanInRange(value, min, max);
    if (v === undefined) throw new NbctlError(`${value}: ${name} must be in the range ${min}...${max}`);
    out[name] = v;
  }
  return out;
}

const qosAdd: CommandSpec = {
  args: [5, 7],
  options: '--may-exist',
  run: async (nb, [sw, directionArg, priorityArg, match, ...rest], flags) => {
    const direction = parseDirection(directionArg as string);
    const priority = parsePriority(priorityArg as string);
    const ls = await findSwitch(nb, sw as string);
    const { dscp, rate, burst } = qosSettings(rest);
    if (dscp === undefined && rate === undefined) throw new NbctlError('Either "rate" and/or "dscp" must be specified');
    const rule = { direction, priority, match };
    if ((await qosRulesOf(nb, ls)).some((q) => qosOrder(q, rule) === 0)) {
      if (flags.has('--may-exist')) return '';
      throw new NbctlError(`Same qos already existed on the ls ${sw}.`);
    }
    const row: Record<string, unknown> = { ...rule };
    if (dscp !== undefined) row.action = ['map', [['dscp', Number(dscp)]]];
    // A burst counts only with a rate, as in ovn-nbctl.
    if (rate !== undefined) row.bandwidth = ['map', burst === undefined ? [['rate', Number(rate)]] : [['rate', Number(rate)], ['burst', Number(burst)]]];
    await nb.transact([
      { op: 'insert', table: 'QoS', 'uuid-name': 'q', row },
      { op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['qos_rules', 'insert', ['named-uuid', 'q']]] },
    ]);
    return '';
  },
};

const qosDel: CommandSpec = {
  args: [1, 4],
  options: '',
  run: async (nb, [sw, which, priorityArg, match]) => {
    const ls = await findSwitch(nb, sw as string);
    const detach = async (rules: readonly RowJson[]): Promise<string> => {
      if (rules.length > 0) await nb.transact([{ op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['qos_rules', 'delete', ['set', rules.map((q) => uuidRef(uuidOf(q)))]]] }]);
      return '';
    };
    if (which === undefined) {
      await nb.transact([{ op: 'update', table: 'Logical_Switch', where: byUuid(ls), row: { qos_rules: ['set', []] } }]);
      return '';
    }
    const uuid = isUuid(which) ? which.toLowerCase() : undefined;
    const direction = uuid === undefined ? parseDirection(which) : undefined;
    const rules = await qosRulesOf(nb, ls);
    if (priorityArg === undefined) {
      if (uuid === undefined) return detach(rules.filter((q) => q.direction === direction));
      const rule = rules.find((q) => uuidOf(q) === uuid);
      if (rule === undefined) throw new NbctlError('uuid is not found');
      return detach([rule]);
    }
    if (uuid !== undefined) throw new NbctlError('uuid must be the only argument');
    const priority = parsePriority(priorityArg);
    if (match === undefined) throw new NbctlError('cannot specify priority without match');
    return detach(rules.filter((q) => q.priority === priority && q.match === match && q.direction === direction).slice(0, 1));
  },
};

const qosList: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [sw]) => {
    const ls = await findSwitch(nb, sw as string);
    return (await qosRulesOf(nb, ls)).sort(qosOrder).map(qosLine).join('');
  },
};

// --- meters --------------------------------------------------------------------------------

const meterAdd: CommandSpec = {
  args: [4, 5],
  options: '--fair,--may-exist',
  run: async (nb, [name, action, rateArg, unit, burstArg], flags) => {
    // With --may-exist, a meter of this name is rewritten: its first band (in UUID order)
    // takes the new values and becomes its only one.
    const meter = (await nb.rows('Meter', [['name', '==', name]]))[0];
    if (meter !== undefined && !flags.has('--may-exist')) throw new NbctlError(`meter with name "${name}" already exists`);
    if ((name as string).startsWith('__')) throw new NbctlError('meter names that begin with "__" are reserved');
    if (action !== 'drop') throw new NbctlError('action must be "drop"');
    const rate = scanInRange(rateArg as string, 1n, uint32Max);
    if (rate === undefined) throw new NbctlError('rate must be in the range 1...4294967295');
    if (unit !== 'kbps' && unit !== 'pktps') throw new NbctlError('unit must be "kbps" or "pktps"');
    const burst = burstArg === undefined ? 0n : scanInRange(burstArg, 0n, uint32Max);
    if (burst === undefined) throw new NbctlError('burst must be in the range 0...4294967295');

    const band = { action, rate: Number(rate), burst_size: Number(burst) };
    const firstBand = meter === undefined ? undefined : setOf(meter.bands).map(text).sort(strcmp)[0];
    const bandOps: unknown[] = firstBand === undefined ? [{ op: 'insert', table: 'Meter_Band', 'uuid-name': 'b', row: band }] : [{ op: 'update', table: 'Meter_Band', where: [['_uuid', '==', uuidRef(firstBand)]], row: band }];
    const row: Record<string, unknown> = { name, unit, bands: ['set', [firstBand === undefined ? ['named-uuid', 'b'] : uuidRef(firstBand)]] };
    // Without --fair an existing meter keeps its fair setting.
    if (flags.has('--fair')) row.fair = true;
    const meterOp = meter === undefined ? { op: 'insert', table: 'Meter', row } : { op: 'update', table: 'Meter', where: byUuid(meter), row };
    await nb.transact([...bandOps, meterOp]);
    return '';
  },
};

const meterDel: CommandSpec = {
  args: [0, 1],
  options: '',
  run: async (nb, [name]) => {
    // Every meter without a name; none of the name is no error.
    const doomed = name === undefined ? await nb.rows('Meter') : (await nb.rows('Meter', [['name', '==', name]])).slice(0, 1);
    if (doomed.length > 0) await nb.transact(doomed.map((m) => ({ op: 'delete', table: 'Meter', where: byUuid(m) })));
    return '';
  },
};

const meterList: CommandSpec = {
  args: [0, 0],
  options: '',
  run: async (nb) => {
    const meters = (await nb.rows('Meter')).sort((a, b) => strcmp(String(a.name), String(b.name)));
    if (meters.length === 0) return '';
    const bands = new Map((await nb.rows('Meter_Band')).map((b) => [uuidOf(b), b]));
    let out = '';
    for (const m of meters) {
      const fair = optional(m.fair);
      out += `${String(m.name)}:${fair === undefined ? '' : ` (${fair === true ? 'fair' : 'shared'})`} bands:\n`;
      // As in ovn-nbctl, bands follow one another on one line.
      for (const id of setOf(m.bands).map(text).sort(strcmp)) {
        const b = bands.get(id);
        if (b === undefined) continue;
        out += `  ${String(b.action)}: ${String(b.rate)} ${String(m.unit)}`;
        if (Number(b.burst_size) !== 0) out += `, ${String(b.burst_size)} ${m.unit === 'kbps' ? 'kb' : 'packet'} burst`;
      }
      out += '\n';
    }
    return out;
  },
};

export const qosMeterCommands: Record<string, CommandSpec> = {
  'qos-add': qosAdd,
  'qos-del': qosDel,
  'qos-list': qosList,
  'meter-add': meterAdd,
  'meter-del': meterDel,
  'meter-list': meterList,
};
