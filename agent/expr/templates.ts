// Chassis template variables: "^NAME" in a logical flow's match or actions, or in a template
// load balancer's VIPs and backends, stands for this chassis's value of NAME (its SB
// Chassis_Template_Var row, variables column). ovn-controller expands them before it parses the
// text (lib/lex.c, lexer_parse_template_string), and so do we, the same way: a text with no "^"
// is used as it is; otherwise it is lexed and written again token by token, with no space
// between tokens, each template token replaced by the variable's value as written, or by its
// bare name when this chassis has no such variable (the text then fails to parse, and the flow
// is left out with an error, as ovn-controller leaves it out).
//
// Pure: text and variables in, text out.

import { formatToken, lex } from './lexer.js';

const NO_VARIABLES: ReadonlyMap<string, string> = new Map();

/** `text` with its template variables expanded from `variables` (see above). */
export function expandTemplates(text: string, variables: ReadonlyMap<string, string> = NO_VARIABLES): string {
  if (!text.includes('^')) return text;
  const lexed = lex(text);
  // A text that does not lex stays as written: the parser reports the same error.
  if ('error' in lexed) return text;
  let out = '';
  for (const t of lexed.tokens) out += t.kind === 'template' ? (variables.get(t.name) ?? t.name) : formatToken(t);
  return out;
}

