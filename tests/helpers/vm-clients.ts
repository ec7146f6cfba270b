// Small clients a test runs inside a VM's namespace (node, over the VM's real sockets), for
// protocols whose usual clients are not installed or print too little to compare byte for byte.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { NsHost } from './netns.js';

const execFileAsync = promisify(execFile);

/**
 * A DHCPv6 client for one exchange, run by node inside the VM's namespace: from [::]:546 over
 * eth0 it sends SOLICIT, then REQUEST naming the advertised server and address, then
 * INFORMATION-REQUEST, each to ff02::1:2 port 547, and prints every answer as JSON (message type,
 * transaction id, options as [code, hex]). Debian ships no DHCPv6 client in the base system (not
 * busybox's build either), so this stands in for one; the packets cross the VM's real stack.
 */
const dhcpv6Client = `
import dgram from 'node:dgram';
const mac = Buffer.from(process.argv[1].split(':').map((x) => parseInt(x, 16)));
const opt = (code, data) => { const h = Buffer.alloc(4); h.writeUInt16BE(code, 0); h.writeUInt16BE(data.length, 2); return Buffer.concat([h, data]); };
const clientId = opt(1, Buffer.concat([Buffer.from([0, 3, 0, 1]), mac]));
const iaNa = (inner) => opt(3, Buffer.concat([Buffer.from([0, 0, 0x17, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]), inner]));
const parse = (b) => { const out = []; for (let at = 4; at + 4 <= b.length;) { const len = b.readUInt16BE(at + 2); out.push([b.readUInt16BE(at), b.subarray(at + 4, at + 4 + len).toString('hex')]); at += 4 + len; } return out; };
const s = dgram.createSocket({ type: 'udp6', reuseAddr: true });
const answers = [];
let step = 0;
const send = (type, xid, opts) => s.send(Buffer.concat([Buffer.from([type, 0, 0, xid]), ...opts]), 547, 'ff02::1:2%eth0');
const timer = setTimeout(() => { console.log(JSON.stringify(answers)); process.exit(2); }, 4000);
s.on('message', (m) => {
  const a = { type: m[0], xid: m[3], options: parse(m) };
  answers.push(a);
  const get = (code) => a.options.find((o) => o[0] === code)?.[1];
  if (step === 0 && a.type === 2 && a.xid === 1) {
    step = 1;
    const ia = Buffer.from(get(3) ?? '', 'hex');
    send(3, 2, [clientId, opt(2, Buffer.from(get(2) ?? '', 'hex')), iaNa(ia.subarray(12)), opt(8, Buffer.alloc(2))]);
  } else if (step === 1 && a.type === 7 && a.xid === 2) {
    step = 2;
    send(11, 3, [clientId, opt(6, Buffer.from([0, 23, 0, 24])), opt(8, Buffer.alloc(2))]);
  } else if (step === 2 && a.type === 7 && a.xid === 3) {
    clearTimeout(timer);
    console.log(JSON.stringify(answers));
    process.exit(0);
  }
});
s.bind({ port: 546, address: '::' }, () => {
  s.setMulticastInterface('::%eth0');
  send(1, 1, [clientId, iaNa(Buffer.alloc(0)), opt(8, Buffer.alloc(2))]);
});
`;

export interface Dhcp6Answer {
  readonly type: number;
  readonly xid: number;
  readonly options: [number, string][];
}

/** One DHCPv6 exchange from `vm` (see dhcpv6Client); undefined when it did not complete. */
export async function dhcpv6Exchange(vm: NsHost): Promise<Dhcp6Answer[] | undefined> {
  try {
    const { stdout } = await execFileAsync('ip', ['netns', 'exec', vm.ns, process.execPath, '--input-type=module', '-e', dhcpv6Client, vm.mac], { timeout: 15_000 });
    return JSON.parse(stdout) as Dhcp6Answer[];
  } catch {
    return undefined;
  }
}

/**
 * DNS queries from `vm` to `server`:53, one at a time, each from UDP port 40053 with id 0x1000 + its
 * index and the RD flag: the answers' DNS payloads as hex, or "error CODE" (an ICMP error such as
 * ECONNREFUSED), or "none" after a second without an answer.
 */
const dnsClient = `
import dgram from 'node:dgram';
const [server, spec] = [process.argv[1], JSON.parse(process.argv[2])];
const out = [];
const ask = (i) => new Promise((resolve) => {
  const [name, type] = spec[i];
  const s = dgram.createSocket(server.includes(':') ? 'udp6' : 'udp4');
  const done = (r) => { clearTimeout(timer); s.close(); resolve(r); };
  const timer = setTimeout(() => done('none'), 1000);
  s.on('message', (m) => done(m.toString('hex')));
  s.on('error', (e) => done('error ' + e.code));
  s.bind(40053, () => {
    s.connect(53, server, () => {
      const head = Buffer.from([0x10, i, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
      const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
      s.send(Buffer.concat([head, ...labels, Buffer.from([0, 0, type, 0, 1])]));
    });
  });
});
for (let i = 0; i < spec.length; i++) out.push(await ask(i));
console.log(JSON.stringify(out));
`;

export async function dnsQueries(vm: NsHost, server: string, queries: readonly (readonly [string, number])[]): Promise<string[]> {
  const { stdout } = await execFileAsync('ip', ['netns', 'exec', vm.ns, process.execPath, '--input-type=module', '-e', dnsClient, server, JSON.stringify(queries)], { timeout: 30_000 });
  return JSON.parse(stdout) as string[];
}

/**
 * `n` TCP connections from `vm` to ip:port, one after another; each answer's text or "fail"
 * (refused, reset or no answer within 1.5 s). New source ports each time, so that a load
 * balancer's hash sees different connections.
 */
export async function connectMany(vm: NsHost, ip: string, port: number, n: number): Promise<string[]> {
  const script = `
    const net = require('net');
    const one = () => new Promise((done) => {
      const s = net.connect({ host: ${JSON.stringify(ip)}, port: ${port} });
      let text = '';
      const timer = setTimeout(() => { s.destroy(); done('fail'); }, 1500);
      s.on('data', (d) => { text += d; });
      s.on('end', () => { clearTimeout(timer); done(text.trim()); });
      s.on('error', () => { clearTimeout(timer); done('fail'); });
    });
    (async () => { const out = []; for (let i = 0; i < ${n}; i++) out.push(await one()); console.log(JSON.stringify(out)); })();`;
  return JSON.parse(await vm.exec(process.execPath, '-e', script)) as string[];
}

/** What `vm`'s kernel made of the router advertisements on eth0 (SLAAC), as `ip` prints it. */
export interface SlaacState {
  /** Global addresses it configured from advertised prefixes ("proto kernel_ra" ones), sorted. */
  readonly addresses: string[];
  /** Its default route through the advertising router, without the ticking "expires" part. */
  readonly route: string;
  /** eth0's IPv6 MTU (an advertised MTU option sets it). */
  readonly mtu: string;
}

/**
 * Starts `vm`'s IPv6 on eth0 afresh (off and on, accepting advertisements), soliciting routers
 * or (`solicit` false) only listening for the advertisements they send unasked, and returns
 * once an advertisement configured an address, or undefined after `timeoutMs`.
 */
export async function slaac(vm: NsHost, timeoutMs = 30_000, solicit = true): Promise<SlaacState | undefined> {
  await vm.exec('sysctl', '-qw', 'net.ipv6.conf.eth0.accept_ra=2', `net.ipv6.conf.eth0.router_solicitations=${solicit ? 3 : 0}`, 'net.ipv6.conf.eth0.disable_ipv6=1');
  await vm.exec('sysctl', '-qw', 'net.ipv6.conf.eth0.disable_ipv6=0');
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const addresses = (await vm.exec('ip', '-6', '-o', 'addr', 'show', 'dev', 'eth0', 'scope', 'global', 'dynamic')).split('\n')
      .map((l) => /inet6 (\S+)/.exec(l)?.[1]).filter((a): a is string => a !== undefined).sort();
    const route = (await vm.exec('ip', '-6', 'route', 'show', 'default', 'dev', 'eth0')).trim().replace(/ expires \d+sec/, '');
    if (addresses.length > 0 && route !== '') {
      return { addresses, route, mtu: (await vm.exec('sysctl', '-n', 'net.ipv6.conf.eth0.mtu')).trim() };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return undefined;
}
