// The agent stream through real processes: `ovnts up --detach` writes SB_GRPC, agents
// (agent/sb-stream.ts) connect there, and `ovnts nbctl --wait=hv` returns once every one of
// them has acknowledged the change; killing the member an agent is on moves it to another,
// resumed, and --wait=hv still returns. Method: the real command line in child processes.
import t from 'tap';
import { ovnts, until, upCluster } from '../helpers/ovnts-cli.js';
import { stopPid } from '../helpers/process.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

t.test('ovnts up writes SB_GRPC; nbctl --wait=hv waits for the agents there', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const env = await upCluster(t, dir);
  t.equal(env.sbGrpc.length, 3, 'SB_GRPC names every member');
  t.same(env.sbGrpc, env.nbGrpc, 'on the Northbound addresses');
  const nbctl = (...args: string[]): ReturnType<typeof ovnts> => ovnts('nbctl', `--endpoints=${env.nbGrpc.join(',')}`, ...args);
  t.equal((await nbctl('ls-add', 'sw0')).code, 0);
  t.equal((await nbctl('lsp-add', 'sw0', 'vm1')).code, 0);

  // Two agents, each starting on a different member.
  const agents = [0, 1].map((i) => new ViewAgent({ chassis: `hv${i}`, hostname: `hv${i}`, encaps: geneve(`192.0.2.${i + 1}`), lastRevision: 0 }, { endpoints: env.sbGrpc, random: () => i / 3 }).start());
  t.teardown(() => Promise.all(agents.map((a) => a.close())));
  for (const a of agents) await a.until(() => a.rows('Chassis').length === 2, 'both chassis registered');

  const waited = await nbctl('--wait=hv', 'ls-add', 'sw1');
  t.equal(waited.code, 0, `--wait=hv returned: ${waited.stderr}`);
  const nbCfg = Number((await nbctl('get', 'NB_Global', '.', 'nb_cfg')).stdout.trim());
  t.ok(nbCfg > 0, `nb_cfg was bumped (${nbCfg})`);
  t.same(agents.map((a) => a.nbCfg()), [nbCfg, nbCfg], 'both agents had acknowledged nb_cfg when it returned');
  // The acks may have been counted before they were committed (server/live-acks.ts): hv_cfg follows.
  await until('hv_cfg to reach nb_cfg', async () => (Number((await nbctl('get', 'NB_Global', '.', 'hv_cfg')).stdout.trim()) === nbCfg ? true : undefined));
  t.pass('hv_cfg reached nb_cfg');

  // The member agent 0 is on dies; the agent resumes elsewhere, and --wait=hv still completes.
  const connected = agents[0]?.states.filter((s) => s.state === 'connected').at(-1);
  const index = env.sbGrpc.indexOf(connected?.state === 'connected' ? connected.endpoint : '');
  t.ok(index >= 0, 'agent 0 is on a known member');
  await stopPid(env.pids[index] as number, (argv) => argv.includes('central'));
  const others = env.nbGrpc.filter((_, i) => i !== index).join(',');
  const again = await ovnts('nbctl', `--endpoints=${others}`, '--wait=hv', 'ls-add', 'sw2');
  t.equal(again.code, 0, `--wait=hv with a member gone: ${again.stderr}`);
  const a0 = agents[0] as ViewAgent;
  await a0.until(() => a0.source.stats().resumes + a0.source.stats().snapshots >= 2, 'its reconnection');
  t.equal(a0.source.stats().snapshots, 1, 'resumed without a second snapshot');
});
