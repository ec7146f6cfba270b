// ovn-nbctl's commands on the database's own configuration: init, the Northbound database's
// remotes (set-connection, get-connection, del-connection) and its SSL settings (set-ssl,
// get-ssl, del-ssl), all hanging off the one NB_Global row, with ovn-nbctl 23.03's arguments
// and output. ovn-nbctl creates NB_Global in every transaction that finds none; these commands
// do so in theirs (other ovnts nbctl commands leave that to `ovnts up`).
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { byUuid, flagValue, strcmp } from './nb.js';



/** The op that writes `row` into NB_Global: an update of the row, or its insert when there is none. */
async function writeNbGlobal(nb: NbAccess, row: Record<string, unknown>): Promise<unknown> {
  const global = (await nb.rows('NB_Global'))[0];
  return global === undefined ? { op: 'insert', table: 'NB_Global', row } : { op: 'update', table: 'NB_Global', where: byUuid(global), row };
}

/** C's atoll: optional blanks and sign, then digits; 0 when there are none; saturating. */
function atoll(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d*)/.exec(s) as RegExpExecArray;
  if ((m[2] as string) === '') return 0;
  const v = BigInt(`${m[1] as string}${m[2] as string}`);
  const max = 2n ** 63n - 1n;
  return Number(v > max ? max : v < -max - 1n ? -max - 1n : v);
}

const deleteAll = (rows: readonly RowJson[], table: string): unknown[] => rows.map((r) => ({ op: 'delete', table, where: byUuid(r) }));

export const globalCommands: Record<string, CommandSpec> = {
  init: {
    args: [0, 0],
    options: '',
    run: async (nb) => {
      if ((await nb.rows('NB_Global')).length === 0) await nb.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
      return '';
    },
  },

  // --- connections -------------------------------------------------------------------------
  'get-connection': {
    args: [0, 0],
    options: '',
    run: async (nb) => [...new Set((await nb.rows('Connection')).map((c) => String(c.target)))].sort(strcmp).map((t) => `${t}\n`).join(''),
  },
  'del-connection': {
    args: [0, 0],
    options: '',
    run: async (nb) => {
      await nb.transact([...deleteAll(await nb.rows('Connection'), 'Connection'), await writeNbGlobal(nb, { connections: ['set', []] })]);
      return '';
    },
  },
  'set-connection': {
    args: [1, Infinity],
    options: '--inactivity-probe=',
    // Replaces every connection. ovn-nbctl only logs a warning for a target of no known type;
    // two equal targets fail on the target index.
    run: async (nb, targets, flags) => {
      const probe = flagValue(flags, '--inactivity-probe');
      const inserts = targets.map((target, i) => ({
        op: 'insert',
        table: 'Connection',
        'uuid-name': `c${i}`,
        row: probe === undefined ? { target } : { target, inactivity_probe: atoll(probe) },
      }));
      const connections = ['set', targets.map((_, i) => ['named-uuid', `c${i}`])];
      await nb.transact([...deleteAll(await nb.rows('Connection'), 'Connection'), ...inserts, await writeNbGlobal(nb, { connections })]);
      return '';
    },
  },

  // --- SSL ---------------------------------------------------------------------------------
  'get-ssl': {
    args: [0, 0],
    options: '',
    run: async (nb) => {
      const ssl = (await nb.rows('SSL'))[0];
      if (ssl === undefined) return '';
      return `Private key: ${String(ssl.private_key)}\nCertificate: ${String(ssl.certificate)}\nCA Certificate: ${String(ssl.ca_cert)}\nBootstrap: ${ssl.bootstrap_ca_cert === true ? 'true' : 'false'}\n`;
    },
  },
  'del-ssl': {
    args: [0, 0],
    options: '',
    run: async (nb) => {
      const ssl = await nb.rows('SSL');
      if (ssl.length > 0) await nb.transact([...deleteAll(ssl, 'SSL'), await writeNbGlobal(nb, { ssl: ['set', []] })]);
      return '';
    },
  },
  'set-ssl': {
    args: [3, 5],
    options: '--bootstrap',
    run: async (nb, [privateKey, certificate, caCert, protocols, ciphers], flags) => {
      const row: Record<string, unknown> = { private_key: privateKey, certificate, ca_cert: caCert, bootstrap_ca_cert: flags.has('--bootstrap') };
      if (protocols !== undefined) row.ssl_protocols = protocols;
      if (ciphers !== undefined) row.ssl_ciphers = ciphers;
      await nb.transact([
        ...deleteAll(await nb.rows('SSL'), 'SSL'),
        { op: 'insert', table: 'SSL', 'uuid-name': 's', row },
        await writeNbGlobal(nb, { ssl: ['named-uuid', 's'] }),
      ]);
      return '';
    },
  },
};
