// Goal: no actions string makes the action compiler (or the whole-row compiler) throw; bad input
// always gets a non-empty error. Method: seeded garbage from the language's alphabet, random
// bytes, and seeded mutations (deleted, duplicated, swapped tokens) of valid action strings.
// A failing seed is printed and replays with OVNTS_SEED=<seed> OVNTS_FUZZ=1.

import t, { type Test } from 'tap';
import { compileActions, type ActionContext } from '../../agent/actions/index.js';
import { compileLogicalFlow } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { Prng } from './expr-fixtures.js';

const symtab = buildSymtab();
const seedBase = Number(process.env.OVNTS_SEED ?? 9001);
const casesN = Number(process.env.OVNTS_FUZZ ?? 600);

const ctx: ActionContext = {
  symtab, pipeline: 'ingress', table: 10, isSwitch: true,
  lookupPort: (n) => (n === 'lsp1' ? 1 : undefined),
  groupId: (d) => d.length % 7 === 0 ? undefined : 1 + (d.length % 100),
};

const alphabet = [
  'next', 'output', 'drop', 'ct_next', 'ct_commit', 'ct_lb', 'ct_lb_mark', 'ct_dnat', 'ct_snat', 'ct_clear', 'clone', 'arp',
  'nd_na', 'icmp4', 'reject', 'put_arp', 'get_arp', 'lookup_arp', 'put_dhcp_opts', 'check_pkt_larger', 'log', 'backends',
  'hash_fields', 'bind_vport', 'trigger_event', 'event', '"empty_lb_backends"', 'vip', 'protocol', 'load_balancer', '"tcp"', '"10.0.0.1:80"', 'offerip', 'router', 'verdict', 'severity', 'pipeline', 'table', 'egress', 'inport', 'outport', 'reg0',
  'reg9', 'xxreg1', 'ct_mark', 'ct_label', 'eth.dst', 'ip4.src', 'ip.ttl', 'flags.loopback', 'tcp.dst', 'arp.spa', 'ip',
  '=', '<->', '--', ';', '{', '}', '(', ')', '[', ']', ',', ':', '..', '-', '"lsp1"', '"x"', '0', '1', '80', '1500',
  '10.0.0.1', 'fd00::1', '00:00:00:00:00:01', '0xff', '0x1/0x1', '10.0.0.0/24', '65536', '18446744073709551616', '^t', '$as',
  '@pg', '/*', '*/', '//', '\\', '\n', 'é', '\u0000', ' ',
];

const valid = [
  'ct_commit { ct_mark.blocked = 0; ct_label.label = reg3; }; next;',
  'reg1[0] = put_dhcp_opts(offerip = 1.2.3.4, router = 10.0.0.1, dns_server = {8.8.8.8, 7.7.7.7});',
  'ct_lb_mark(backends=192.168.1.2:80,[fd00::2]:8080; hash_fields="ip_src,ip_dst"; skip_snat);',
  'arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.op = 1; output; }; clone { outport = "lsp1"; output; }; next(pipeline=egress, table=3);',
  'reg0[0] = lookup_arp(inport, arp.spa, arp.sha); get_nd(outport, xxreg0); ct_dnat(10.0.0.1, 100-200); log(verdict=drop);',
  'reg9[1] = check_pkt_larger(1500); ip.ttl--; reg0 <-> reg1; eth.src = eth.dst; ct_snat_in_czone;',
  'bind_vport("lsp1", inport); bind_vport("x", outport); next;',
  'trigger_event(event = "empty_lb_backends", vip = "[fd00::1]:80", protocol = "tcp", load_balancer = "12345678-abcd-9876-fedc-11119f8e7d6c");',
];

function checkOne(t: Test, text: string, label: string): boolean {
  let r;
  try {
    r = compileActions(text, ctx);
  } catch (e) {
    t.fail(`${label} threw ${String(e)} on ${JSON.stringify(text)}`);
    return false;
  }
  if ('error' in r && (typeof r.error !== 'string' || r.error.length === 0)) {
    t.fail(`${label}: empty error on ${JSON.stringify(text)}`);
    return false;
  }
  try {
    const row = { _uuid: '00000000-0000-4000-8000-000000000001', logical_datapath: ['dp'], logical_dp_group: [],
      pipeline: 'ingress' as const, table_id: 10, priority: 1, match: 'ip4', actions: text };
    compileLogicalFlow(row, { symtab, datapath: () => ({ tunnelKey: 1, isSwitch: true }), groupId: ctx.groupId });
  } catch (e) {
    t.fail(`${label}: compileLogicalFlow threw ${String(e)} on ${JSON.stringify(text)}`);
    return false;
  }
  return 'error' in r;
}

t.test('random garbage from the alphabet', async (t) => {
  let errors = 0;
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + i);
    const n = r.int(1, 16);
    let s = '';
    for (let k = 0; k < n; k++) s += r.pick(alphabet) + (r.chance(0.5) ? ' ' : '');
    if (checkOne(t, s, `seed ${seedBase + i}`)) errors++;
  }
  t.ok(errors > casesN / 2, `${errors} of ${casesN} rejected with an error`);
});

t.test('random bytes', async (t) => {
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + 100_000 + i);
    const n = r.int(0, 40);
    let s = '';
    for (let k = 0; k < n; k++) s += String.fromCharCode(r.int(0, 127));
    checkOne(t, s, `seed ${seedBase + 100_000 + i}`);
  }
  t.pass('no throw');
});

t.test('mutations of valid actions', async (t) => {
  for (const v of valid) t.ok('actions' in compileActions(v, ctx), `valid: ${v}`);
  let accepted = 0;
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + 200_000 + i);
    const words = r.pick(valid).split(/(\s+|[;(){}[\],=])/).filter((w) => w !== '');
    const edits = r.int(1, 3);
    for (let k = 0; k < edits && words.length > 0; k++) {
      const at = r.int(0, words.length - 1);
      const op = r.int(0, 3);
      if (op === 0) words.splice(at, 1);
      else if (op === 1) words.splice(at, 0, words[at] as string);
      else if (op === 2) words.splice(at, 1, r.pick(alphabet));
      else {
        const other = r.int(0, words.length - 1);
        [words[at], words[other]] = [words[other] as string, words[at] as string];
      }
    }
    if (!checkOne(t, words.join(''), `seed ${seedBase + 200_000 + i}`)) accepted++;
  }
  t.ok(accepted >= 0, `${accepted} mutants still compile`);
});

t.test('pathological inputs', async (t) => {
  const deep = 'clone { '.repeat(40) + 'next;' + ' };'.repeat(40);
  const r = compileActions(deep, ctx);
  t.match('error' in r ? r.error : '', /maximum depth of nested actions/);
  t.ok('error' in compileActions('next; '.repeat(20_000), ctx), 'too long: rejected before lexing');
  checkOne(t, 'ct_lb(backends=' + '10.0.0.1,'.repeat(2000) + ');', 'many backends');
  checkOne(t, 'log(name="' + 'x'.repeat(100) + '", verdict=drop);', 'long log name');
  checkOne(t, 'reg1[0] = put_dhcp_opts(offerip = 1.1.1.1, domain_name = "' + 'a'.repeat(300) + '");', 'long option');
  checkOne(t, 'ct_lb(backends=1.1.1.1; hash_fields=', 'truncated hash_fields');
  checkOne(t, 'ct_lb(backends=1.1.1.1; skip_snat', 'flag at end');
  checkOne(t, 'log(', 'open log');
  checkOne(t, 'reg1[0] = put_dhcp_opts(offerip = {', 'open set');
});
