// ovn-nbctl's commands on one router port's settings (lrp-set-enabled, lrp-get-enabled,
// lrp-set-options, lrp-set-redirect-type, lrp-get-redirect-type) and on static MAC bindings
// (static-mac-binding-*), with ovn-nbctl 23.03's argument rules, messages and listing.
// ovn-nbctl 23.03 has no lrp-get-options.
import { ethAddrFromString } from '../../../northd/netaddr.js';
import { normalizeAddrStr } from './inet.js';
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, findRecord, mapOf, optional, parseEnabled, strcmp, text } from './nb.js';


const findRouterPort = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Router_Port', id, 'port');

async function updatePort(nb: NbAccess, lrp: RowJson, row: Record<string, unknown>): Promise<string> {
  await nb.transact([{ op: 'update', table: 'Logical_Router_Port', where: byUuid(lrp), row }]);
  return '';
}

/**
 * KEY=VALUE arguments as an smap, as ovn-nbctl builds one: an argument without "=" is
 * skipped, and of a key given twice the first value stays.
 */
function firstValues(args: readonly string[]): [string, string][] {
  const m = new Map<string, string>();
  for (const a of args) {
    const i = a.indexOf('=');
    if (i >= 0 && !m.has(a.slice(0, i))) m.set(a.slice(0, i), a.slice(i + 1));
  }
  return [...m];
}

const redirectTypeKey = 'redirect-type';

const portSettingCommands: Record<string, CommandSpec> = {
  'lrp-set-enabled': {
    args: [2, 2],
    options: '',
    run: async (nb, [port, state]) => {
      const lrp = await findRouterPort(nb, port as string);
      return updatePort(nb, lrp, { enabled: parseEnabled(state as string) });
    },
  },
  'lrp-get-enabled': {
    args: [1, 1],
    options: '',
    run: async (nb, [port]) => `${optional((await findRouterPort(nb, port as string)).enabled) === false ? 'disabled' : 'enabled'}\n`,
  },
  'lrp-set-options': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [port, ...kvs]) => {
      const lrp = await findRouterPort(nb, port as string);
      return updatePort(nb, lrp, { options: ['map', firstValues(kvs)] });
    },
  },
  'lrp-set-redirect-type': {
    args: [2, 2],
    options: '',
    run: async (nb, [port, type]) => {
      const lrp = await findRouterPort(nb, port as string);
      const t = (type as string).toLowerCase();
      if (t !== 'bridged' && t !== 'overlay') throw new NbctlError(`Invalid redirect type: ${type}`);
      // The type is stored as given ("Bridged" stays so); the port's other options stay.
      const options = mapOf(lrp.options).map(([k, v]) => [text(k), text(v)] as [string, string]).filter(([k]) => k !== redirectTypeKey);
      return updatePort(nb, lrp, { options: ['map', [...options, [redirectTypeKey, type]]] });
    },
  },
  'lrp-get-redirect-type': {
    args: [1, 1],
    options: '',
    run: async (nb, [port]) => {
      const lrp = await findRouterPort(nb, port as string);
      const entry = mapOf(lrp.options).find(([k]) => text(k) === redirectTypeKey);
      return `${entry === undefined ? 'overlay' : text(entry[1])}\n`;
    },
  },
};

// --- static MAC bindings -------------------------------------------------------------------

function normalizedIp(ip: string): string {
  const n = normalizeAddrStr(ip);
  if (n === undefined) throw new NbctlError(`${ip}: Not a valid IPv4 or IPv6 address.`);
  return n;
}

/** The binding of this port name and IP text, compared as given (ovn-nbctl's lookup). */
async function bindingOf(nb: NbAccess, logicalPort: string, ip: string): Promise<RowJson | undefined> {
  return (await nb.rows('Static_MAC_Binding', [['logical_port', '==', logicalPort], ['ip', '==', ip]]))[0];
}

const staticMacBindingCommands: Record<string, CommandSpec> = {
  'static-mac-binding-add': {
    args: [3, 3],
    options: '--may-exist',
    run: async (nb, [port, ip, mac], flags) => {
      await findRouterPort(nb, port as string);
      const newIp = normalizedIp(ip as string);
      if (ethAddrFromString(mac as string) === undefined) throw new NbctlError(`invalid mac address ${mac}.`);
      // Looked up by the IP as typed, stored normalized (as ovn-nbctl does): "fd00::0:5" finds no
      // binding of "fd00::5", and its insert then meets the (logical_port, ip) index.
      const existing = await bindingOf(nb, port as string, ip as string);
      if (existing !== undefined) {
        if (!flags.has('--may-exist')) throw new NbctlError(`${port}, ${newIp}: a Static_MAC_Binding with this logical_port and ip already exists`);
        if (existing.mac !== mac) await nb.transact([{ op: 'update', table: 'Static_MAC_Binding', where: byUuid(existing), row: { mac } }]);
        return '';
      }
      await nb.transact([{ op: 'insert', table: 'Static_MAC_Binding', row: { logical_port: port, ip: newIp, mac } }]);
      return '';
    },
  },
  'static-mac-binding-del': {
    args: [2, 2],
    options: '--if-exists',
    run: async (nb, [port, ip], flags) => {
      await findRouterPort(nb, port as string);
      const newIp = normalizedIp(ip as string);
      const existing = await bindingOf(nb, port as string, newIp);
      if (existing !== undefined) {
        await nb.transact([{ op: 'delete', table: 'Static_MAC_Binding', where: byUuid(existing) }]);
        return '';
      }
      if (!flags.has('--if-exists')) throw new NbctlError(`no matching Static_MAC_Binding with port ${port} and ip ${newIp}`);
      return '';
    },
  },
  'static-mac-binding-list': {
    args: [0, 0],
    options: '',
    run: async (nb) => {
      const lines = (await nb.rows('Static_MAC_Binding'))
        .map((b) => ({ key: `${String(b.logical_port).padEnd(25)}${String(b.ip).padEnd(25)}`, mac: String(b.mac) }))
        .sort((a, b) => strcmp(a.key, b.key) || strcmp(a.mac, b.mac));
      if (lines.length === 0) return '';
      return `${'LOGICAL_PORT'.padEnd(25)}${'IP'.padEnd(25)}MAC\n${lines.map((l) => `${l.key.padEnd(25)}${l.mac}\n`).join('')}`;
    },
  },
};

export const routerPortCommands: Record<string, CommandSpec> = { ...portSettingCommands, ...staticMacBindingCommands };
