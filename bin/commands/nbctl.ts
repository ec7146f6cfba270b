// `ovnts nbctl`: ovn-nbctl's everyday commands against an ovnts cluster's Northbound API. Names
// and meanings follow ovn-nbctl; so do error messages where it has them. Endpoints come from
// --endpoints, else $OVNTS_NB, else ./.ovnts/env (written by `ovnts up`); a member that does not
// answer is skipped for the next.
import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { NorthboundClient } from '../../server/northbound-service.js';

class NbctlError extends Error {}

function endpointsFrom(flag: string | undefined): string[] {
  const fromEnvFile = (): string | undefined => {
    const path = '.ovnts/env';
    if (!existsSync(path)) return undefined;
    return /^NB_GRPC="?([^"\n]*)"?$/m.exec(readFileSync(path, 'utf8'))?.[1];
  };
  const list = flag ?? process.env.OVNTS_NB ?? fromEnvFile();
  if (list === undefined || list === '') throw new NbctlError('no endpoints: give --endpoints, set OVNTS_NB, or run `ovnts up` here');
  return list.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Talks to the first member that answers. */
class Nb {
  private readonly clients: NorthboundClient[];
  constructor(endpoints: string[]) {
    this.clients = endpoints.map((e) => new NorthboundClient(e, 10_000));
  }
  private async first<T>(f: (c: NorthboundClient) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const c of this.clients) {
      try {
        return await f(c);
      } catch (err) {
        last = err;
        const code = (err as { code?: number }).code;
        if (code !== 14 && code !== 4) throw err; // only UNAVAILABLE / DEADLINE_EXCEEDED move on
      }
    }
    throw new NbctlError(`no member answered: ${(last as Error).message}`);
  }
  async transact(ops: unknown[]): Promise<unknown[]> {
    const out = await this.first((c) => c.transact(ops));
    if (out.failed) {
      const err = out.results.find((r) => r !== null && typeof r === 'object' && 'error' in r) as { error: string; details?: string } | undefined;
      throw new NbctlError(`transaction error: ${err ? `{"details":${JSON.stringify(err.details ?? '')},"error":${JSON.stringify(err.error)}}` : 'failed'}`);
    }
    return out.results;
  }
  rows(table: string, where: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.first((c) => c.list(table, where)).then((r) => r.rows);
  }
  close(): void {
    for (const c of this.clients) c.close();
  }
}

const setOf = (v: unknown): unknown[] => (Array.isArray(v) && v[0] === 'set' ? (v[1] as unknown[]) : [v]);
const uuidOf = (row: Record<string, unknown>): string => (row._uuid as [string, string])[1];
const str = (v: unknown): string => (Array.isArray(v) && v[0] === 'uuid' ? (v[1] as string) : String(v));

async function findSwitch(nb: Nb, name: string): Promise<Record<string, unknown>> {
  const byName = await nb.rows('Logical_Switch', [['name', '==', name]]);
  if (byName.length > 1) throw new NbctlError(`Multiple logical switches named '${name}'.  Use a UUID.`);
  if (byName[0] !== undefined) return byName[0];
  if (/^[0-9a-f-]{36}$/.test(name)) {
    const byUuid = await nb.rows('Logical_Switch', [['_uuid', '==', ['uuid', name]]]);
    if (byUuid[0] !== undefined) return byUuid[0];
  }
  throw new NbctlError(`${name}: switch name not found`);
}

async function findPort(nb: Nb, name: string): Promise<Record<string, unknown>> {
  const rows = await nb.rows('Logical_Switch_Port', [['name', '==', name]]);
  if (rows[0] === undefined) throw new NbctlError(`${name}: port name not found`);
  return rows[0];
}

type Handler = (nb: Nb, args: string[], flags: Set<string>) => Promise<string>;

const commands: Record<string, { args: [number, number]; run: Handler }> = {
  'ls-add': {
    args: [0, 1],
    run: async (nb, [name], flags) => {
      if (name !== undefined && (await nb.rows('Logical_Switch', [['name', '==', name]])).length > 0) {
        if (flags.has('--may-exist')) return '';
        throw new NbctlError(`${name}: a switch with this name already exists`);
      }
      await nb.transact([{ op: 'insert', table: 'Logical_Switch', row: name === undefined ? {} : { name } }]);
      return '';
    },
  },
  'ls-del': {
    args: [1, 1],
    run: async (nb, [name], flags) => {
      let ls: Record<string, unknown>;
      try {
        ls = await findSwitch(nb, name as string);
      } catch (err) {
        if (flags.has('--if-exists')) return '';
        throw err;
      }
      await nb.transact([{ op: 'delete', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', uuidOf(ls)]]] }]);
      return '';
    },
  },
  'ls-list': {
    args: [0, 0],
    run: async (nb) => (await nb.rows('Logical_Switch')).map((r) => `${uuidOf(r)} (${String(r.name)})\n`).sort((a, b) => a.slice(38).localeCompare(b.slice(38))).join(''),
  },
  'lsp-add': {
    args: [2, 2],
    run: async (nb, [sw, port], flags) => {
      const ls = await findSwitch(nb, sw as string);
      const existing = await nb.rows('Logical_Switch_Port', [['name', '==', port]]);
      if (existing.length > 0) {
        if (flags.has('--may-exist')) return '';
        throw new NbctlError(`${port}: a port with this name already exists`);
      }
      await nb.transact([
        { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: port } },
        { op: 'mutate', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', uuidOf(ls)]]], mutations: [['ports', 'insert', ['named-uuid', 'p']]] },
      ]);
      return '';
    },
  },
  'lsp-del': {
    args: [1, 1],
    run: async (nb, [port], flags) => {
      let p: Record<string, unknown>;
      try {
        p = await findPort(nb, port as string);
      } catch (err) {
        if (flags.has('--if-exists')) return '';
        throw err;
      }
      // Removing the port from its switch garbage-collects the (non-root) port row.
      await nb.transact([{ op: 'mutate', table: 'Logical_Switch', where: [['ports', 'includes', ['uuid', uuidOf(p)]]], mutations: [['ports', 'delete', ['uuid', uuidOf(p)]]] }]);
      return '';
    },
  },
  'lsp-list': {
    args: [1, 1],
    run: async (nb, [sw]) => {
      const ls = await findSwitch(nb, sw as string);
      const ports = new Set(setOf(ls.ports).map(str));
      const rows = (await nb.rows('Logical_Switch_Port')).filter((r) => ports.has(uuidOf(r)));
      return rows.map((r) => `${uuidOf(r)} (${String(r.name)})\n`).sort((a, b) => a.slice(38).localeCompare(b.slice(38))).join('');
    },
  },
  'lsp-set-addresses': {
    args: [1, Infinity],
    run: async (nb, [port, ...addresses]) => {
      const p = await findPort(nb, port as string);
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: [['_uuid', '==', ['uuid', uuidOf(p)]]], row: { addresses: ['set', addresses] } }]);
      return '';
    },
  },
  'lsp-get-addresses': {
    args: [1, 1],
    run: async (nb, [port]) => setOf((await findPort(nb, port as string)).addresses).map((a) => `${String(a)}\n`).join(''),
  },
  'lsp-get-up': {
    args: [1, 1],
    run: async (nb, [port]) => {
      const up = setOf((await findPort(nb, port as string)).up);
      return `${up[0] === true ? 'up' : 'down'}\n`;
    },
  },
  show: {
    args: [0, 1],
    run: async (nb, [sw]) => {
      const switches = sw === undefined ? await nb.rows('Logical_Switch') : [await findSwitch(nb, sw)];
      const ports = new Map((await nb.rows('Logical_Switch_Port')).map((r) => [uuidOf(r), r]));
      let out = '';
      for (const ls of switches.sort((a, b) => String(a.name).localeCompare(String(b.name)))) {
        out += `switch ${uuidOf(ls)} (${String(ls.name)})\n`;
        const mine = setOf(ls.ports).map((u) => ports.get(str(u))).filter((p): p is Record<string, unknown> => p !== undefined);
        for (const p of mine.sort((a, b) => String(a.name).localeCompare(String(b.name)))) {
          out += `    port ${String(p.name)}\n`;
          const addrs = setOf(p.addresses).map(String);
          if (addrs.length > 0) out += `        addresses: [${addrs.map((a) => JSON.stringify(a)).join(', ')}]\n`;
        }
      }
      return out;
    },
  },
  list: {
    args: [1, 1],
    run: async (nb, [table]) => JSON.stringify(await nb.rows(table as string), null, 2) + '\n',
  },
  sync: { args: [0, 0], run: async (nb) => (await nb.rows('NB_Global'), '') },
};

export function registerNbctlCommand(program: Command): void {
  program
    .command('nbctl')
    .description(`ovn-nbctl's everyday commands against an ovnts cluster (${Object.keys(commands).sort().join(', ')})`)
    .option('--endpoints <list>', 'Northbound gRPC addresses, comma-separated (default: $OVNTS_NB or ./.ovnts/env)')
    .argument('<words...>', 'an ovn-nbctl command and its arguments, with flags such as --may-exist or --if-exists')
    .allowUnknownOption(true)
    .action(async (words: string[], o: { endpoints?: string }) => {
      const flags = new Set(words.filter((a) => a.startsWith('--')));
      const [name = '', ...args] = words.filter((a) => !a.startsWith('--'));
      const cmd = commands[name];
      try {
        if (cmd === undefined) throw new NbctlError(`unknown command '${name}'; use --help for help`);
        if (args.length < cmd.args[0] || args.length > cmd.args[1]) throw new NbctlError(`'${name}' command takes ${cmd.args[0] === cmd.args[1] ? cmd.args[0] : `${cmd.args[0]} to ${cmd.args[1] === Infinity ? 'any number of' : cmd.args[1]}`} arguments`);
        const nb = new Nb(endpointsFrom(o.endpoints));
        try {
          process.stdout.write(await cmd.run(nb, args, flags));
        } finally {
          nb.close();
        }
      } catch (err) {
        if (!(err instanceof NbctlError)) throw err;
        process.stderr.write(`ovnts nbctl: ${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
