// Compact one-line renderings of entries and messages for scenario traces and failure reports.

import { decodeConfChange, formatConfState } from '../../cluster/conf-change.js';
import type { Entry, Message } from '../../cluster/types.js';

const decoder = new TextDecoder();

export function formatEntry(e: Entry): string {
  let payload: string;
  switch (e.type) {
    case 'empty':
      payload = 'empty';
      break;
    case 'normal':
      payload = JSON.stringify(decoder.decode(e.data));
      break;
    case 'conf-change': {
      const cc = decodeConfChange(e.data);
      switch (cc.kind) {
        case 'bootstrap':
          payload = `bootstrap(${cc.voters.join(' ')})`;
          break;
        case 'set-election-ticks':
          payload = `set-election-ticks(${cc.ticks})`;
          break;
        default:
          payload = `${cc.kind}(${cc.id})`;
      }
      break;
    }
  }
  return `${e.term}/${e.index} ${payload}`;
}

export function formatEntries(es: readonly Entry[]): string {
  return `[${es.map(formatEntry).join(', ')}]`;
}

export function formatMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'app':
      return `${head} prev=${m.logTerm}/${m.index} commit=${m.commit} entries=${formatEntries(m.entries)}`;
    case 'app-resp':
      return m.reject
        ? `${head} reject index=${m.index} hint=${m.logTerm}/${m.rejectHint}`
        : `${head} index=${m.index}`;
    case 'vote':
    case 'pre-vote':
      return `${head} last=${m.logTerm}/${m.index}${m.transfer ? ' transfer' : ''}`;
    case 'vote-resp':
    case 'pre-vote-resp':
      return `${head} ${m.reject ? 'reject' : 'grant'}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.readSeq > 0 ? ` read=${m.readSeq}` : ''}`;
    case 'heartbeat-resp':
      return `${head}${m.readSeq > 0 ? ` read=${m.readSeq}` : ''}`;
    case 'snap':
      return `${head} snap=${m.snapshot.meta.term}/${m.snapshot.meta.index} ${formatConfState(m.snapshot.meta.conf)}`;
    case 'timeout-now':
      return head;
    case 'read-index':
      return `${head} ctx=${m.ctx}`;
    case 'read-index-resp':
      return `${head} index=${m.index} ctx=${m.ctx}`;
  }
}
