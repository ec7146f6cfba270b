// Random topologies against the real ovn-northd 23.03. Each seed draws a network (switches with
// VIF, localnet, virtual, external, router and IPAM-allocated ports; routers joined to them and
// to each other, with IPv6 router advertisements, multicast relay and other options; NB_Global
// options; static, ECMP and source routes,
// policies, a gateway router or a distributed gateway port with NAT; ACLs on switches and port
// groups, address sets, QoS, DNS, load balancers on switches and routers, DHCP options), builds
// it with the real ovn-nbctl one transaction per step, then changes some of it (ports, ACLs,
// load balancers, NAT rules, policies and router links deleted; ports added, readdressed,
// disabled or retyped; groups edited; a gateway chassis moved or removed; snooping toggled). The
// real ovn-northd derives its SB and ours derives its own from the same NB rows; every table and
// every datapath's flows must agree (tests/northd/real-compare.ts), after the build and again
// after the changes. The scripted differential tests choose their cases; this one finds
// combinations nobody wrote down.
//
// Seeds: DIFF_SEEDS (how many, from DIFF_SEED_FROM, default 1); one alone with DIFF_SEED. A
// failing seed prints its steps.
import t from 'tap';
import { Rng } from '../helpers/seeded-rng.js';
import { missingTools, startRealSandbox } from './real-northd.js';
import { chassisAdd, compareWithReal, localnetLsp, routerLsp } from './real-compare.js';

const LONG = process.env.OVNTS_LONG !== undefined;
const ONLY = process.env.DIFF_SEED;
const FROM = Number(process.env.DIFF_SEED_FROM ?? 1);
const COUNT = Number(process.env.DIFF_SEEDS ?? (LONG ? 100 : 3));

type Step = readonly string[];

interface Drawn {
  /** The steps that build the network. */
  readonly build: readonly Step[];
  /** The steps that change it afterwards. */
  readonly changes: readonly Step[];
  /** Whether a port was deleted and another added since (tunnel keys then differ by design). */
  readonly portsReused: boolean;
}

const hex2 = (n: number): string => n.toString(16).padStart(2, '0');

/** A network drawn from `seed`, as ovn-nbctl steps. */
function drawTopology(seed: number): Drawn {
  const rng = new Rng(seed);
  const build: Step[] = [];
  const switches: { name: string; n: number; vifs: { name: string; ip?: string }[]; router?: string }[] = [];
  /** The VIFs' names and (those with an IPv4 address) their addresses, across all switches. */
  const vifNames = (): string[] => switches.flatMap((s) => s.vifs.map((v) => v.name));
  const vifIps = (): string[] => switches.flatMap((s) => s.vifs.flatMap((v) => (v.ip === undefined ? [] : [v.ip])));
  const routers: { name: string; n: number; gateway: boolean; switches: number[] }[] = [];
  const acls: string[] = [];
  const lbs: { name: string; on: string[] }[] = [];
  const nats: { lr: string; type: string; ext: string }[] = [];
  const policies: { lr: string; priority: string; match: string }[] = [];
  const dgps: string[] = [];
  const links: { lrp: string; lsp: string }[] = [];

  if (rng.chance(0.2)) build.push(['set', 'NB_Global', '.', rng.pick(['options:ignore_lsp_down=false', 'options:use_ct_inv_match=false', 'options:default_acl_drop=true'])]);
  const switchCount = rng.int(1, 3);
  for (let i = 1; i <= switchCount; i++) {
    const name = `sw${i}`;
    build.push(['ls-add', name]);
    if (rng.chance(0.2)) build.push(['set', 'Logical_Switch', name, 'other_config:mcast_snoop=true']);
    const sw = { name, n: i, vifs: [] as { name: string; ip?: string }[] };
    switches.push(sw);
    const vifCount = rng.int(1, 4);
    for (let j = 1; j <= vifCount; j++) {
      const port = `p${i}_${j}`;
      const mac = `00:00:00:00:${hex2(i)}:${hex2(j)}`;
      const ip = `10.0.${i}.${10 + j}`;
      const addresses = rng.weighted<string | undefined>([
        [`${mac} ${ip}`, 5],
        [`${mac} ${ip} fd00:${i}::${10 + j}`, 3],
        [`${mac} ${ip} 10.0.${i}.${100 + j}`, 1],
        [mac, 1],
        ['unknown', 1],
        [undefined, 1],
      ]);
      const step = ['lsp-add', name, port];
      if (addresses !== undefined) step.push('--', 'lsp-set-addresses', port, addresses);
      if (addresses !== undefined && addresses.includes('.') && rng.chance(0.4)) step.push('--', 'lsp-set-port-security', port, addresses);
      if (rng.chance(0.1)) step.push('--', 'lsp-set-type', port, 'localport');
      build.push(step);
      sw.vifs.push(addresses?.includes('.') === true ? { name: port, ip } : { name: port });
    }
    if (rng.chance(0.15)) {
      build.push(localnetLsp(name, `ln${i}`, `phys${i}`));
    }
    if (rng.chance(0.2)) {
      // IPAM: a subnet with excluded addresses, and ports whose addresses northd allocates.
      build.push(['set', 'Logical_Switch', name, `other_config:subnet=10.0.${i}.0/24`, `other_config:exclude_ips="10.0.${i}.2..10.0.${i}.9 10.0.${i}.30"`]);
      const dyn = `d${i}`;
      build.push(['lsp-add', name, dyn, '--', 'lsp-set-addresses', dyn, rng.pick(['dynamic', `00:00:00:00:${hex2(i)}:77 dynamic`])]);
    }
    if (rng.chance(0.15)) {
      // An external port, served by the chassis of its HA chassis group.
      const ext = `e${i}`;
      build.push(['--id=@c', 'create', 'HA_Chassis', 'chassis_name=hv1', 'priority=10', '--', '--id=@g', 'create', 'HA_Chassis_Group', `name=hg${i}`, 'ha_chassis=@c',
        '--', 'lsp-add', name, ext, '--', 'lsp-set-type', ext, 'external', '--', 'lsp-set-addresses', ext, `00:00:00:00:${hex2(i)}:55 10.0.${i}.55`,
        '--', 'set', 'Logical_Switch_Port', ext, 'ha_chassis_group=@g']);
    }
    const parents = sw.vifs.filter((v) => v.ip !== undefined).map((v) => v.name);
    if (parents.length > 0 && rng.chance(0.15)) {
      // A virtual port whose parents are VIFs of the switch.
      const vp = `v${i}`;
      build.push(['lsp-add', name, vp, '--', 'lsp-set-type', vp, 'virtual', '--', 'lsp-set-addresses', vp, `00:00:00:00:${hex2(i)}:99 10.0.${i}.99`,
        '--', 'lsp-set-options', vp, `virtual-ip=10.0.${i}.99`, `virtual-parents=${rng.subset(parents, 2).concat(parents.slice(0, 1)).filter((p, k, a) => a.indexOf(p) === k).join(',')}`]);
    }
  }

  const routerCount = rng.int(0, 2);
  for (let k = 1; k <= routerCount; k++) {
    const name = `lr${k}`;
    build.push(['lr-add', name]);
    const gateway = rng.chance(0.4);
    if (gateway) build.push(['set', 'Logical_Router', name, 'options:chassis=hv1', ...(rng.chance(0.3) ? ['options:lb_force_snat_ip=router_ip'] : [])]);
    if (rng.chance(0.25)) build.push(['set', 'Logical_Router', name, rng.pick(['options:dynamic_neigh_routers=true', 'options:always_learn_from_arp_request=false', 'options:mac_binding_age_threshold=300'])]);
    if (rng.chance(0.15)) build.push(['set', 'Logical_Router', name, 'options:mcast_relay=true']);
    routers.push({ name, n: k, gateway, switches: [] });
  }
  // Each switch joins at most one router, through its .1 address.
  for (const sw of switches) {
    if (routers.length === 0 || !rng.chance(0.75)) continue;
    const lr = rng.pick(routers);
    const lrp = `${lr.name}-${sw.name}`;
    const networks = [`10.0.${sw.n}.1/24`, ...(rng.chance(0.5) ? [`fd00:${sw.n}::1/64`] : [])];
    build.push(['lrp-add', lr.name, lrp, `00:00:00:00:ff:${hex2(10 * lr.n + sw.n)}`, ...networks]);
    if (networks.length > 1 && rng.chance(0.4)) {
      build.push(['set', 'Logical_Router_Port', lrp, `ipv6_ra_configs:address_mode=${rng.pick(['slaac', 'dhcpv6_stateful', 'dhcpv6_stateless'])}`, ...(rng.chance(0.5) ? ['ipv6_ra_configs:send_periodic=true', 'ipv6_ra_configs:mtu=1400'] : [])]);
    }
    build.push(routerLsp(sw.name, `${sw.name}-${lr.name}`, lrp));
    links.push({ lrp, lsp: `${sw.name}-${lr.name}` });
    sw.router = lr.name;
    lr.switches.push(sw.n);
  }
  // Two routers: a join switch between them and routes to each other's subnets.
  if (routers.length === 2 && rng.chance(0.7)) {
    build.push(['ls-add', 'join']);
    for (const lr of routers) {
      build.push(['lrp-add', lr.name, `${lr.name}-join`, `00:00:00:00:fe:${hex2(lr.n)}`, `100.64.0.${lr.n}/24`]);
      build.push(routerLsp('join', `join-${lr.name}`, `${lr.name}-join`));
    }
    for (const lr of routers) {
      const other = routers.find((r) => r !== lr);
      for (const n of other?.switches ?? []) build.push(['lr-route-add', lr.name, `10.0.${n}.0/24`, `100.64.0.${other?.n ?? 0}`]);
    }
  }
  for (const lr of routers) {
    const connected = lr.switches;
    if (connected.length === 0) continue;
    const via = (x: number): string => `10.0.${rng.pick(connected)}.${200 + x}`;
    const routeCount = rng.int(0, 3);
    for (let x = 0; x < routeCount; x++) {
      const prefix = rng.pick([`192.168.${x}.0/24`, '0.0.0.0/0', `172.31.${x}.0/24`]);
      const step = ['lr-route-add', lr.name, prefix, via(x)];
      build.push(rng.chance(0.3) ? ['--ecmp', ...step] : ['--may-exist', ...step]);
      if (rng.chance(0.25)) build.push(['--ecmp', 'lr-route-add', lr.name, prefix, via(x + 20)]);
    }
    if (rng.chance(0.4)) {
      const n = rng.pick(connected);
      const action = rng.pick(['drop', 'allow', 'reroute']);
      const policy = { lr: lr.name, priority: String(rng.int(1, 32000)), match: `ip4.src == 10.0.${n}.0/24` };
      build.push(['lr-policy-add', lr.name, policy.priority, policy.match, action, ...(action === 'reroute' ? [`10.0.${n}.250`] : [])]);
      policies.push(policy);
    }
    if (lr.gateway) {
      const n = rng.pick(connected);
      build.push(['lr-nat-add', lr.name, 'snat', `172.16.${lr.n}.1`, `10.0.${n}.0/24`]);
      nats.push({ lr: lr.name, type: 'snat', ext: `10.0.${n}.0/24` });
      const vif = switches.find((s) => s.n === n)?.vifs.find((v) => v.ip !== undefined);
      if (vif?.ip !== undefined && rng.chance(0.7)) {
        const type = rng.pick(['dnat_and_snat', 'dnat']);
        build.push(['lr-nat-add', lr.name, type, `172.16.${lr.n}.10`, vif.ip]);
        nats.push({ lr: lr.name, type, ext: `172.16.${lr.n}.10` });
      }
    } else if (rng.chance(0.5)) {
      // A distributed gateway port to an external switch, with NAT on it (one rule distributed:
      // handled on the chassis of its logical port).
      const ext = `ext${lr.n}`;
      build.push(['ls-add', ext]);
      build.push(['lrp-add', lr.name, `${lr.name}-${ext}`, `00:00:00:00:fd:${hex2(lr.n)}`, `172.20.${lr.n}.1/24`]);
      build.push(routerLsp(ext, `${ext}-${lr.name}`, `${lr.name}-${ext}`));
      if (rng.chance(0.5)) build.push(localnetLsp(ext, `${ext}-ln`, 'physnet'));
      build.push(['lrp-set-gateway-chassis', `${lr.name}-${ext}`, 'hv1', '10']);
      dgps.push(`${lr.name}-${ext}`);
      const n = rng.pick(connected);
      build.push(['lr-nat-add', lr.name, 'snat', `172.20.${lr.n}.100`, `10.0.${n}.0/24`]);
      const vif = switches.find((s) => s.n === n)?.vifs.find((v) => v.ip !== undefined);
      if (vif?.ip !== undefined) {
        build.push(['lr-nat-add', lr.name, 'dnat_and_snat', `172.20.${lr.n}.50`, vif.ip, ...(rng.chance(0.5) ? [vif.name, `00:00:00:aa:00:${hex2(lr.n)}`] : [])]);
      }
      if (rng.chance(0.3)) build.push(['--may-exist', 'lr-route-add', lr.name, '0.0.0.0/0', `172.20.${lr.n}.254`]);
    }
    if (rng.chance(0.3) && connected.length > 0) {
      // A source-IP route, and a policy rerouting to two next hops.
      const n = rng.pick(connected);
      build.push(['--may-exist', '--policy=src-ip', 'lr-route-add', lr.name, `10.0.${n}.0/25`, `10.0.${n}.240`]);
      build.push(['lr-policy-add', lr.name, String(rng.int(100, 200)), `ip4.dst == 198.51.100.0/24 && ip4.src == 10.0.${n}.0/24`, 'reroute', `10.0.${n}.241,10.0.${n}.242`]);
    }
  }

  // Address sets and port groups, then ACLs that may name them.
  const addressSets: string[] = [];
  if (rng.chance(0.5)) {
    const ips = vifIps();
    const chosen = rng.subset(ips, 3);
    build.push(['create', 'Address_Set', 'name=as1', `addresses=${chosen.length === 0 ? '[]' : chosen.map((a) => `"${a}"`).join(',')}`]);
    addressSets.push('as1');
  }
  const portGroups: string[] = [];
  const allVifs = vifNames();
  if (rng.chance(0.5) && allVifs.length > 0) {
    build.push(['pg-add', 'pg1', ...rng.subset(allVifs, 3)]);
    portGroups.push('pg1');
  }
  const aclCount = rng.int(0, 5);
  for (let a = 0; a < aclCount; a++) {
    const onGroup = portGroups.length > 0 && rng.chance(0.3);
    const sw = rng.pick(switches);
    const direction = rng.pick(['from-lport', 'to-lport']);
    const portField = direction === 'from-lport' ? 'inport' : 'outport';
    const matches = [
      'ip4',
      'ip6',
      'ip4 && tcp.dst == 80',
      'udp && udp.dst == 53',
      `ip4.src == 10.0.${sw.n}.0/24`,
      'icmp4',
      `${portField} == "${rng.pick(sw.vifs).name}" && ip4`,
      ...(addressSets.length > 0 ? ['ip4.src == $as1', 'ip4.dst == $as1 && tcp'] : []),
    ];
    const match = onGroup ? `${portField} == @pg1 && ${rng.pick(['ip4', 'tcp', 'ip6'])}` : rng.pick(matches);
    const action = rng.pick(['allow', 'allow-related', 'drop', 'reject', 'allow-stateless']);
    const priority = String(rng.pick([0, 1000, 1005, 2000, 32700]) + 10 * a);
    const afterLb = direction === 'from-lport' && rng.chance(0.2) ? ['--apply-after-lb'] : [];
    build.push([...afterLb, 'acl-add', onGroup ? 'pg1' : sw.name, direction, priority, match, action]);
    acls.push(onGroup ? 'pg1' : sw.name);
  }

  // QoS rules (DSCP marking, rate limits) and a logged ACL with a name.
  for (const sw of switches) {
    if (!rng.chance(0.25)) continue;
    const action = rng.pick(['dscp=10', 'rate=1000 burst=100', 'dscp=20 rate=500']);
    build.push(['qos-add', sw.name, rng.pick(['from-lport', 'to-lport']), String(rng.int(0, 32767)), rng.pick(['ip4', 'tcp', `ip4.src == 10.0.${sw.n}.0/24`]), ...action.split(' ')]);
  }
  if (rng.chance(0.25)) {
    const sw = rng.pick(switches);
    build.push(['--log', '--severity=warning', '--name=logged', 'acl-add', sw.name, 'to-lport', '3001', 'ip4 && udp', rng.pick(['drop', 'allow-related'])]);
    acls.push(sw.name);
  }
  // DNS records on a switch.
  if (rng.chance(0.3)) {
    const sw = rng.pick(switches);
    const vif = sw.vifs.find((v) => v.ip !== undefined);
    if (vif?.ip !== undefined) build.push(['--id=@r', 'create', 'DNS', `records:${vif.name}.ovn.org=${vif.ip}`, '--', 'add', 'Logical_Switch', sw.name, 'dns_records', '@r']);
  }

  // Load balancers on switches and routers.
  const lbCount = rng.int(0, 2);
  for (let l = 1; l <= lbCount; l++) {
    const backends = vifIps();
    if (backends.length === 0) break;
    const withPort = rng.chance(0.6);
    const vip = withPort ? `30.0.0.${l}:80` : `30.0.0.${l}`;
    const chosen = rng.subset(backends, 3);
    if (chosen.length === 0) chosen.push(backends[0] as string);
    const name = `lb${l}`;
    build.push(['lb-add', name, vip, chosen.map((b) => (withPort ? `${b}:8080` : b)).join(','), ...(withPort ? [rng.pick(['tcp', 'udp'])] : [])]);
    if (rng.chance(0.3)) build.push(['set', 'Load_Balancer', name, rng.pick(['options:reject=true', 'options:skip_snat=true', 'options:hairpin_snat_ip="169.254.0.1"'])]);
    const lb = { name, on: [] as string[] };
    lbs.push(lb);
    for (const sw of switches) {
      if (!rng.chance(0.5)) continue;
      build.push(['ls-lb-add', sw.name, name]);
      lb.on.push(sw.name);
    }
    for (const lr of routers) {
      if (!rng.chance(0.4)) continue;
      build.push(['lr-lb-add', lr.name, name]);
      lb.on.push(lr.name);
    }
  }

  // DHCPv4 options for some ports of a routed switch.
  for (const sw of switches) {
    if (sw.router === undefined || !rng.chance(0.4)) continue;
    const port = sw.vifs.find((v) => v.ip !== undefined);
    if (port === undefined) continue;
    build.push(['--id=@d', 'create', 'DHCP_Options', `cidr=10.0.${sw.n}.0/24`, 'options:lease_time=3600', `options:router=10.0.${sw.n}.1`,
      `options:server_id=10.0.${sw.n}.1`, `options:server_mac="c0:ff:ee:00:00:${hex2(sw.n)}"`, '--', 'set', 'Logical_Switch_Port', port.name, 'dhcpv4_options=@d']);
  }

  // Changes.
  const changes: Step[] = [];
  let portDeleted = false;
  let portsReused = false;
  const changeCount = rng.int(1, 5);
  for (let c = 0; c < changeCount; c++) {
    const sw = rng.pick(switches);
    const vif = rng.pick(sw.vifs);
    const kind = rng.pick(['lsp-del', 'lsp-add', 'addresses', 'disable', 'acl-del', 'lb-del', 'ls-lb-del', 'pg-set-ports', 'route-del',
      'nat-del', 'policy-del', 'link-del', 'gateway', 'snoop', 'localport']);
    if (kind === 'lsp-del' && sw.vifs.length > 1) {
      changes.push(['lsp-del', vif.name]);
      sw.vifs.splice(sw.vifs.indexOf(vif), 1);
      if (portGroups.length > 0) portGroups.length = 0; // pg1 may have lost a port: no more edits of it
      portDeleted = true;
    } else if (kind === 'lsp-add') {
      const name = `q${sw.n}_${c}`;
      changes.push(['lsp-add', sw.name, name, '--', 'lsp-set-addresses', name, `00:00:00:00:${hex2(sw.n)}:${hex2(0x80 + c)} 10.0.${sw.n}.${150 + c}`]);
      sw.vifs.push({ name, ip: `10.0.${sw.n}.${150 + c}` });
      if (portDeleted) portsReused = true;
    } else if (kind === 'addresses') {
      changes.push(['lsp-set-addresses', vif.name, `00:00:00:00:${hex2(sw.n)}:${hex2(0x40 + c)} 10.0.${sw.n}.${120 + c}`]);
    } else if (kind === 'disable') {
      changes.push(['lsp-set-enabled', vif.name, 'disabled']);
    } else if (kind === 'acl-del' && acls.length > 0) {
      changes.push(['acl-del', rng.pick(acls)]);
    } else if (kind === 'lb-del' && lbs.length > 0) {
      const lb = rng.pick(lbs);
      changes.push(['lb-del', lb.name]);
      lbs.splice(lbs.indexOf(lb), 1);
    } else if (kind === 'ls-lb-del') {
      const lb = lbs.find((b) => b.on.some((o) => o.startsWith('sw')));
      const on = lb?.on.find((o) => o.startsWith('sw'));
      if (lb !== undefined && on !== undefined) {
        changes.push(['ls-lb-del', on, lb.name]);
        lb.on.splice(lb.on.indexOf(on), 1);
      }
    } else if (kind === 'pg-set-ports' && portGroups.length > 0) {
      // ovn-nbctl's pg-set-ports takes one port at least.
      const vifs = vifNames();
      const ports = rng.subset(vifs, 3);
      changes.push(['pg-set-ports', 'pg1', ...(ports.length > 0 ? ports : [rng.pick(vifs)])]);
    } else if (kind === 'route-del' && routers.length > 0) {
      changes.push(['--if-exists', 'lr-route-del', rng.pick(routers).name, '0.0.0.0/0']);
    } else if (kind === 'nat-del' && nats.length > 0) {
      // SNAT rules are named by their logical network, the others by their external IP.
      const nat = rng.pick(nats);
      changes.push(['lr-nat-del', nat.lr, nat.type, nat.ext]);
      nats.splice(nats.indexOf(nat), 1);
    } else if (kind === 'policy-del' && policies.length > 0) {
      const policy = rng.pick(policies);
      changes.push(['lr-policy-del', policy.lr, policy.priority, policy.match]);
      policies.splice(policies.indexOf(policy), 1);
    } else if (kind === 'link-del' && links.length > 0) {
      // A switch taken off its router: the router port, then the switch's router-type port.
      const link = rng.pick(links);
      changes.push(['lrp-del', link.lrp]);
      changes.push(['lsp-del', link.lsp]);
      links.splice(links.indexOf(link), 1);
      portDeleted = true;
    } else if (kind === 'gateway' && dgps.length > 0) {
      const dgp = rng.pick(dgps);
      changes.push(rng.chance(0.5) ? ['lrp-set-gateway-chassis', dgp, 'hv1', '20'] : ['lrp-del-gateway-chassis', dgp, 'hv1']);
    } else if (kind === 'snoop') {
      changes.push(['set', 'Logical_Switch', sw.name, `other_config:mcast_snoop=${rng.pick(['true', 'false'])}`]);
    } else if (kind === 'localport') {
      changes.push(['lsp-set-type', vif.name, rng.pick(['localport', ''])]);
    }
  }
  return { build, changes, portsReused };
}

const skip = await missingTools();
const seeds = ONLY !== undefined ? [Number(ONLY)] : Array.from({ length: COUNT }, (_, i) => FROM + i);

for (const seed of seeds) {
  t.test(`random topology ${seed}`, { skip }, async (t) => {
    const drawn = drawTopology(seed);
    t.comment(`steps: ${drawn.build.length} to build, ${drawn.changes.length} changes`);
    const real = await startRealSandbox(t);
    await real.chassisCtl(chassisAdd('hv1', '192.168.0.1'));
    const run = async (steps: readonly Step[]): Promise<void> => {
      for (const step of steps) {
        try {
          await real.nbctl(step);
        } catch (err) {
          throw new Error(`seed ${seed}: ovn-nbctl ${step.join(' ')}: ${(err as Error).message}`, { cause: err });
        }
      }
    };
    const replay = `replay: DIFF_SEED=${seed} npm run test:one -- tests/northd/differential-random.test.ts`;
    await run(drawn.build);
    await compareWithReal(t, real);
    await run(drawn.changes);
    await compareWithReal(t, real, { portKeys: !drawn.portsReused });
    if (t.passing() === false) t.comment(`${replay}\n${[...drawn.build, ...drawn.changes].map((s) => `  ovn-nbctl ${s.join(' ')}`).join('\n')}`);
  });
}
