// The OVN_Southbound OVSDB door with OVN's own ovn-sbctl and ovn-trace: show, list, lflow-list and traces read the
// SB view northd derives; chassis-add and lsp-bind write what chassis own (through any member,
// forwarded to the leader), and the NB sees the port up; a write to a derived table is refused
// with a permission error; a chassis sets a Service_Monitor's status and the load balancer's
// flow follows. Method: `ovnts up` (real processes) and the real ovn-sbctl/ovn-nbctl 23.03.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { ovnts, until, upCluster } from '../helpers/ovnts-cli.js';

const run = promisify(execFile);

async function sbctl(db: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('ovn-sbctl', [`--db=${db}`, '--timeout=20', ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number | string; stdout?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new Error('ovn-sbctl is not installed (apt-get install ovn-central)', { cause: err });
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

t.test('ovn-sbctl against the SB door: reads of the derived view, chassis writes, permission errors', async (t) => {
  const env = await upCluster(t, join(t.testdir(), 'c'));
  t.equal(env.sbOvsdb.length, 3, 'SB_OVSDB lists every member');
  const nb = env.nbGrpc.join(',');
  const sb = env.sbOvsdb.join(',');
  for (const args of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1']]) {
    t.equal((await ovnts('nbctl', `--endpoints=${nb}`, ...args)).code, 0);
  }

  const dps = await sbctl(sb, '--columns=external_ids', 'list', 'Datapath_Binding');
  t.equal(dps.code, 0, dps.stderr);
  t.match(dps.stdout, /name=sw0/, 'list reads northd\'s Datapath_Binding');
  const flows = await sbctl(sb, 'lflow-list', 'sw0');
  t.equal(flows.code, 0, flows.stderr);
  t.match(flows.stdout, /Datapath: "sw0" .*Pipeline: ingress\n\s+table=0 \(ls_in_check_port_sec\)/, 'lflow-list shows the switch pipeline');
  t.match(flows.stdout, /match=\(eth.dst == 00:00:00:00:00:01\), action=\(outport = "vm1"; output;\)/, 'with the port\'s L2 lookup');

  // ovn-trace reads the SB through the door and walks our logical flows: a frame from vm1 to
  // vm2's MAC is switched to vm2 (L2 lookup), one to an unknown MAC is dropped (no port has
  // "unknown" addresses).
  t.equal((await ovnts('nbctl', `--endpoints=${nb}`, 'lsp-add', 'sw0', 'vm2')).code, 0);
  t.equal((await ovnts('nbctl', `--endpoints=${nb}`, 'lsp-set-addresses', 'vm2', '00:00:00:00:00:02 10.0.0.2')).code, 0);
  const trace = async (flow: string): Promise<string> => {
    const r = await run('ovn-trace', [`--db=${sb}`, '--minimal', 'sw0', flow], { timeout: 30_000 }).then((x) => x.stdout, (e: { stdout?: string; stderr?: string }) => `failed: ${e.stderr ?? ''}${e.stdout ?? ''}`);
    return r;
  };
  const toVm2 = await trace('inport == "vm1" && eth.src == 00:00:00:00:00:01 && eth.dst == 00:00:00:00:00:02');
  t.match(toVm2, /output\("vm2"\)/, `ovn-trace: vm1 -> vm2 is delivered to vm2: ${toVm2}`);
  const unknown = await trace('inport == "vm1" && eth.src == 00:00:00:00:00:01 && eth.dst == 00:00:00:00:00:99');
  t.ok(!unknown.startsWith('failed') && !/output\(/.test(unknown), `ovn-trace: an unknown destination is not delivered: ${unknown}`);
  const flood = await trace('inport == "vm1" && eth.src == 00:00:00:00:00:01 && eth.dst == ff:ff:ff:ff:ff:ff');
  t.match(flood, /output\("vm2"\)/, `ovn-trace: a broadcast floods to vm2: ${flood}`);

  // Writes go to the leader through whichever member ovn-sbctl reaches.
  const added = await sbctl(sb, 'chassis-add', 'hv1', 'geneve', '192.0.2.1');
  t.equal(added.code, 0, `chassis-add: ${added.stderr}`);
  const show = await sbctl(sb, 'show');
  t.match(show.stdout, /Chassis hv1\n\s+Encap geneve\n\s+ip: "192\.0\.2\.1"\n\s+options: \{csum="true"\}/, 'show lists the new chassis');
  const bound = await sbctl(sb, 'lsp-bind', 'vm1', 'hv1');
  t.equal(bound.code, 0, `lsp-bind: ${bound.stderr}`);
  t.match((await sbctl(sb, 'show')).stdout, /Port_Binding vm1/, 'the binding shows under the chassis');
  t.equal((await ovnts('nbctl', `--endpoints=${nb}`, 'lsp-get-up', 'vm1')).stdout, 'up\n', 'the NB sees the port up');

  const denied = await sbctl(sb, 'create', 'Datapath_Binding', 'tunnel_key=99');
  t.not(denied.code, 0);
  t.match(denied.stderr, /permission error/, `a derived table is read-only: ${denied.stderr}`);
  t.equal((await sbctl(sb, 'chassis-del', 'hv1')).code, 0, 'chassis-del');
  t.notMatch((await sbctl(sb, 'show')).stdout, /hv1/);
  t.equal((await ovnts('nbctl', `--endpoints=${nb}`, 'lsp-get-up', 'vm1')).stdout, 'down\n', 'the port went down with its chassis');

  // A health-checked load balancer (made with the real ovn-nbctl through the NB door): northd
  // monitors its backends; a chassis sets a Service_Monitor's status with ovn-sbctl, as
  // ovn-controller would, and the backend leaves ct_lb_mark; any other column stays northd's.
  const nbctl = async (...args: string[]): Promise<void> => {
    const { stderr } = await run('ovn-nbctl', [`--db=${env.nbOvsdb.join(',')}`, '--timeout=20', ...args], { timeout: 30_000 });
    t.equal(stderr, '', `ovn-nbctl ${args.join(' ')}`);
  };
  await nbctl('lb-add', 'lb0', '10.0.0.100:80', '10.0.0.1:80,10.0.0.2:80', '--', 'ls-lb-add', 'sw0', 'lb0');
  await nbctl('--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', 'vip="10.0.0.100:80"', 'options:interval=5', '--', 'add', 'Load_Balancer', 'lb0', 'health_check', '@hc');
  await nbctl('set', 'Load_Balancer', 'lb0', 'ip_port_mappings:"10.0.0.1"="vm1:10.0.0.254"', 'ip_port_mappings:"10.0.0.2"="vm2:10.0.0.254"');
  const monitor = await until('a Service_Monitor for vm1', async () => {
    const r = await sbctl(sb, '--bare', '--columns=_uuid', 'find', 'Service_Monitor', 'logical_port=vm1');
    return /^[0-9a-f-]{36}$/.test(r.stdout.trim()) ? r.stdout.trim() : undefined;
  });
  const lbFlow = async (): Promise<string> => (await sbctl(sb, 'lflow-list', 'sw0')).stdout.split('\n').find((l) => l.includes('ls_in_lb') && l.includes('10.0.0.100')) ?? '';
  t.match(await lbFlow(), /ct_lb_mark\(backends=10\.0\.0\.1:80,10\.0\.0\.2:80\)/, 'both backends while no status is known');
  const offline = await sbctl(sb, 'set', 'Service_Monitor', monitor, 'status=offline');
  t.equal(offline.code, 0, `a chassis sets the status: ${offline.stderr}`);
  await until('vm1\'s backend leaves ct_lb_mark', async () => (/ct_lb_mark\(backends=10\.0\.0\.2:80\)/.test(await lbFlow()) ? true : undefined));
  t.pass('the offline backend left ct_lb_mark');
  const port = await sbctl(sb, 'set', 'Service_Monitor', monitor, 'port=81');
  t.not(port.code, 0);
  t.match(port.stderr, /permission error/, `any other column is northd's: ${port.stderr}`);
});

t.test("ovn-sbctl set-connection, set-ssl and SB_Global's external_ids: an operator's rows beside northd's SB_Global", async (t) => {
  const env = await upCluster(t, join(t.testdir(), 'c'));
  const sb = env.sbOvsdb.join(',');
  const nbOvsdb = env.nbOvsdb.join(',');
  const ok = async (...args: string[]): Promise<string> => {
    const r = await sbctl(sb, ...args);
    t.equal(r.code, 0, `ovn-sbctl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  // A monitor on one member (v1: whole new rows), to see every SB_Global change as it is shown.
  const [host, port] = (env.sbOvsdb[2] as string).replace(/^tcp:/, '').split(':') as [string, string];
  const updates: Record<string, unknown>[] = [];
  const watcher = await JsonRpcClient.connect({ host, port: Number(port) }, {
    onNotification: (method, params) => {
      if (method !== 'update') return;
      const rows = ((params as unknown[])[1] as Record<string, Record<string, { new?: Record<string, unknown> }>>).SB_Global ?? {};
      for (const r of Object.values(rows)) if (r.new !== undefined) updates.push(r.new);
    },
  });
  t.teardown(() => watcher.close());
  await watcher.request('monitor', ['OVN_Southbound', null, { SB_Global: { columns: ['nb_cfg', 'connections', 'ssl', 'external_ids'] } }]);

  await ok('set-connection', 'ptcp:6642', 'pssl:6643');
  t.equal(await ok('get-connection'), 'read-write role="" pssl:6643\nread-write role="" ptcp:6642\n', 'get-connection lists both, as ovn-sbctl prints them');
  await ok('set-connection', 'ptcp:6642');
  await ok('set', 'connection', '.', 'inactivity_probe=180000');
  t.equal(await ok('get', 'connection', '.', 'inactivity_probe'), '180000\n', "a Connection's inactivity_probe, as deployment scripts set it");
  await ok('set-ssl', '/etc/ovn/key.pem', '/etc/ovn/cert.pem', '/etc/ovn/ca.pem');
  t.equal(await ok('get-ssl'), 'Private key: /etc/ovn/key.pem\nCertificate: /etc/ovn/cert.pem\nCA Certificate: /etc/ovn/ca.pem\nBootstrap: false\n');
  await ok('set', 'SB_Global', '.', 'external_ids:owner=ops');
  // An NB change moves northd's half (nb_cfg); the operator's stays.
  await run('ovn-nbctl', [`--db=${nbOvsdb}`, '--timeout=20', '--wait=sb', 'sync'], { timeout: 30_000 });
  const global = await ok('--columns=nb_cfg,connections,ssl,external_ids', 'list', 'SB_Global');
  t.match(global, /nb_cfg +: 1\nconnections +: \[[0-9a-f-]{36}\]\nssl +: [0-9a-f-]{36}\nexternal_ids +: \{owner=ops\}/, `northd's and the operator's columns in one row: ${global}`);
  const last = await until('the monitor saw nb_cfg 1', async () => updates.find((u) => u.nb_cfg === 1));
  t.match(last, { connections: ['uuid', /^[0-9a-f-]{36}$/], external_ids: ['map', [['owner', 'ops']]] }, "the monitor's row after northd's change still has the operator's columns");
  t.notOk(updates.some((u) => JSON.stringify(u.connections) === '["set",[]]' && updates.indexOf(u) > 0), 'no update showed the connections gone');

  const options = await sbctl(sb, 'set', 'SB_Global', '.', 'options:x=1');
  t.not(options.code, 0);
  t.match(options.stderr, /SB_Global column options is written by northd.*permission error/, `northd's columns stay northd's: ${options.stderr}`);
  await ok('del-connection');
  await ok('del-ssl');
  t.equal(await ok('list', 'Connection'), '', 'del-connection: the Connection rows are collected');
  t.equal(await ok('list', 'SSL'), '', 'del-ssl: the SSL row too');
  t.equal(await ok('get-connection'), '');
});
