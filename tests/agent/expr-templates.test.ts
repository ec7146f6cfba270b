// Chassis template variables expanded as ovn-controller 23.03 expands them
// (lexer_parse_template_string): token by token, with no space between tokens; a variable this
// chassis lacks leaves its bare name; quoted strings and texts without "^" are kept. Then the
// compiler and the hairpin parser read the expanded text.

import t from 'tap';
import { compileLogicalFlow, formatFlow, type LogicalFlowRow } from '../../agent/compile/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { expandTemplates } from '../../agent/expr/templates.js';
import { parseLoadBalancer } from '../../agent/flows/lb-hairpin.js';
import type * as sb from '../../ovsdb/rows/sb.js';

const vars = new Map([['VIP', '10.0.0.200'], ['PORT', '80'], ['BACKENDS', '10.0.0.1:8080,10.0.0.2:8080'], ['VIP6', 'fd00::200'], ['B6', '[fd00::1]:8080']]);

t.test('expansion', async (t) => {
  t.equal(expandTemplates('ct.new && ip4.dst == 10.0.0.1', vars), 'ct.new && ip4.dst == 10.0.0.1', 'a text without "^" is kept as written');
  t.equal(expandTemplates('ct.new && ip4.dst == ^VIP && tcp.dst == ^PORT', vars), 'ct.new&&ip4.dst==10.0.0.200&&tcp.dst==80', 'tokens written again with no space, variables replaced');
  t.equal(expandTemplates('^VIP:^PORT', vars), '10.0.0.200:80', 'a load balancer key');
  t.equal(expandTemplates('[^VIP6]:^PORT', vars), '[fd00::200]:80', 'an IPv6 key in brackets');
  t.equal(expandTemplates('^B1:8080,^BACKENDS', vars), 'B1:8080,10.0.0.1:8080,10.0.0.2:8080', 'a variable the chassis lacks leaves its bare name');
  t.equal(expandTemplates('reg1 = ^VIP; log(name="a^b"); /* ^VIP */ next;', vars), 'reg1=10.0.0.200;log(name="a^b");next;', 'strings are not expanded; comments go');
  t.equal(expandTemplates('ip4.dst == ^VIP && "unterminated', vars), 'ip4.dst == ^VIP && "unterminated', 'a text that does not lex is kept (its compile reports the error)');
  t.equal(expandTemplates('^VIP'), 'VIP', 'no variables at all');
});

t.test('compiled flows and hairpin parsing read the expanded text', async (t) => {
  const symtab = buildSymtab();
  const row = (match: string, actions: string): LogicalFlowRow => ({
    _uuid: '01234567-89ab-cdef-0123-456789abcdef', logical_datapath: ['dp1'], logical_dp_group: [], pipeline: 'ingress', table_id: 13, priority: 120, match, actions,
  });
  // Group ids by description, so that the same backends name the same group on both compiles.
  const groups = new Map<string, number>();
  const groupId = (desc: string): number => groups.get(desc) ?? (groups.set(desc, groups.size + 1), groups.size);
  const ctx = (templateVars?: ReadonlyMap<string, string>) => ({ symtab, groupId, datapath: () => ({ tunnelKey: 1, isSwitch: true }), ...(templateVars === undefined ? {} : { templateVars }) });
  const templated = compileLogicalFlow(row('ct.new && ip4.dst == ^VIP && tcp.dst == ^PORT', 'reg0[1] = 0; ct_lb_mark(backends=^BACKENDS);'), ctx(vars));
  const literal = compileLogicalFlow(row('ct.new && ip4.dst == 10.0.0.200 && tcp.dst == 80', 'reg0[1] = 0; ct_lb_mark(backends=10.0.0.1:8080,10.0.0.2:8080);'), ctx());
  t.notOk('error' in templated, 'the template row compiles');
  t.same('error' in templated ? [] : templated.flows.map((f) => formatFlow(f)), 'error' in literal ? ['?'] : literal.flows.map((f) => formatFlow(f)), 'to the flows of the same row written with the values');
  t.equal(groups.size, 1, 'and the same group of backends');
  const missing = compileLogicalFlow(row('ct.new && ip4.dst == ^VIP && tcp.dst == ^NOPE', 'next;'), ctx(vars));
  t.ok('error' in missing, 'a row naming a variable this chassis lacks is an error, as ovn-controller skips it');

  const lb = (options: Record<string, string>, vips: Record<string, string>): sb.Load_Balancer => ({
    _uuid: 'lb', _version: 'v', name: 'lb', vips: new Map(Object.entries(vips)), protocol: ['tcp'], datapaths: [], datapath_group: [], options: new Map(Object.entries(options)), external_ids: new Map(),
  }) as sb.Load_Balancer;
  const parsed = parseLoadBalancer(lb({ template: 'true' }, { '^VIP:^PORT': '^BACKENDS', '[^VIP6]:80': '^B6' }), vars);
  t.same(parsed.vips.map((v) => [v.v6, v.ip.toString(16), v.port, v.backends.map((b) => `${b.ip.toString(16)}:${b.port}`)]), [
    [true, 'fd000000000000000000000000000200', 80, ['fd000000000000000000000000000001:8080']],
    [false, 'a0000c8', 80, ['a000001:8080', 'a000002:8080']],
  ], 'a template load balancer\'s VIPs and backends are expanded, then parsed');
  t.same(parseLoadBalancer(lb({}, { '^VIP:^PORT': '^BACKENDS' }), vars).vips, [], 'without options:template nothing is expanded (and nothing parses)');
});
