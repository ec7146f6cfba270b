// dns_lookup: the DNS response ovn-controller 23.03 makes from a query and the records of the
// SB DNS rows of the packet's logical datapath (pinctrl_handle_dns_lookup).
//
// Only a query (QR clear) with at least one question and no additional records is answered, and
// only its first question: A, AAAA, ANY or PTR, class not checked. The name is looked up in
// lowercase (ASCII only, as C's tolower) as a key of the rows' records, first row first; the value
// is a list of IPv4/IPv6 addresses (A, AAAA; ANY gets both) or, for PTR, one host name. Answers
// repeat the question's name uncompressed, class IN, TTL 3600. The response is the query with QR
// set, ANCOUNT the answers, ARCOUNT 0, the question section as it came, then the answers; its
// Ethernet and IP headers and UDP ports stay as the query's (the flows that follow swap them).
// Over IPv4 the UDP checksum is 0; over IPv6 it is computed.
//
// One difference: ovn-controller copies everything after the DNS header to the end of the frame,
// Ethernet padding included; here the copy stops at the end of the UDP datagram. Pure.

import { parseIpv4 as ipv4Value, parseIpv6 as ipv6Value } from '../expr/lexer.js';
import { UDP_HEADER_BYTES, fillUdp6Checksum, ipv6ToBytes, refreshIpv4Checksum, type Frame } from './packet.js';

export const DNS_HEADER_BYTES = 12;
export const DNS_TYPE = { A: 1, PTR: 12, AAAA: 28, ANY: 255 } as const;
const DNS_CLASS_IN = 1;
const DNS_TTL_S = 3600;
/** QR, in the first flags byte: set in a response. */
const DNS_FLAG_QR = 0x80;

export type DnsReply =
  | { readonly kind: 'reply'; readonly packet: Buffer; readonly answers: number }
  | { readonly kind: 'no_reply'; readonly reason: string };

const noReply = (reason: string): DnsReply => ({ kind: 'no_reply', reason });

/** Records of the DNS rows whose datapaths hold the packet's, in the order they are searched. */
export type DnsRecordSets = Iterable<ReadonlyMap<string, string>>;

/** `text` with A-Z in lowercase and every other character as it is. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]+/g, (run) => run.toLowerCase());
}

/** The IP addresses at the start of a record value, as extract_ip_addresses reads them:
 *  whitespace-separated, each with an optional /prefix, up to the first token that is neither. */
export function recordAddresses(value: string): { v4: bigint[]; v6: bigint[] } {
  const v4: bigint[] = [];
  const v6: bigint[] = [];
  for (const token of value.split(/\s+/)) {
    if (token === '') continue;
    const slash = token.indexOf('/');
    const ip = slash < 0 ? token : token.slice(0, slash);
    const plen = slash < 0 ? undefined : token.slice(slash + 1);
    const a = ipv4Value(ip);
    if (a !== null && (plen === undefined || (/^[0-9]{1,2}$/.test(plen) && Number(plen) <= 32))) {
      v4.push(a);
      continue;
    }
    const b = ipv6Value(ip);
    if (b !== null && (plen === undefined || (/^[0-9]{1,3}$/.test(plen) && Number(plen) <= 128))) {
      v6.push(b);
      continue;
    }
    break;
  }
  return { v4, v6 };
}

/**
 * A PTR answer's RDATA as ovn-controller encodes the host name: each dot-separated part after its
 * length byte, in a buffer two bytes longer than the name. "a.b" is 01 61 01 62 00; a name with a
 * trailing dot ends in two zero bytes. Label lengths are kept to a byte, as OVN's are.
 */
export function encodePtrName(name: string): Buffer {
  const text = Buffer.from(name, 'utf8');
  const out = Buffer.alloc(text.length + 2);
  let lengthAt = 0;
  let labelBytes = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === 0x2e) {
      out[lengthAt] = labelBytes & 0xff;
      lengthAt = (lengthAt + labelBytes + 1) & 0xff;
      labelBytes = 0;
    } else {
      out[i + 1] = text[i] as number;
      labelBytes++;
    }
  }
  if (labelBytes > 0) out[lengthAt] = labelBytes & 0xff;
  return out;
}

function answer(qname: Buffer, type: number, rdata: Buffer): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(DNS_CLASS_IN, 2);
  fixed.writeUInt32BE(DNS_TTL_S, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  return Buffer.concat([qname, fixed, rdata]);
}

/** The answer record for `value` (a record's text), or none for the query type. */
function answersFor(qtype: number, qname: Buffer, value: string): Buffer[] {
  if (qtype === DNS_TYPE.PTR) return [answer(qname, DNS_TYPE.PTR, encodePtrName(value))];
  const { v4, v6 } = recordAddresses(value);
  const out: Buffer[] = [];
  if (qtype === DNS_TYPE.A || qtype === DNS_TYPE.ANY) {
    for (const a of v4) {
      const rdata = Buffer.alloc(4);
      rdata.writeUInt32BE(Number(a), 0);
      out.push(answer(qname, DNS_TYPE.A, rdata));
    }
  }
  if (qtype === DNS_TYPE.AAAA || qtype === DNS_TYPE.ANY) for (const a of v6) out.push(answer(qname, DNS_TYPE.AAAA, ipv6ToBytes(a)));
  return out;
}

/** The response to the DNS query in `raw` (parsed as `f`), from `recordSets`. */
export function composeDnsReply(f: Frame, raw: Uint8Array, recordSets: DnsRecordSets): DnsReply {
  if ((f.ipv4 === undefined && f.ipv6 === undefined) || f.udp === undefined || f.l4 === undefined || f.l4Offset === undefined) {
    return noReply('not a UDP packet over IP');
  }
  // parseUdp has checked the UDP length against the IP packet: it bounds everything read here.
  const dgram = f.l4.subarray(0, f.udp.length);
  if (dgram.length < UDP_HEADER_BYTES + DNS_HEADER_BYTES) return noReply('truncated DNS packet');
  const dns = dgram.subarray(UDP_HEADER_BYTES);
  if (((dns[2] as number) & DNS_FLAG_QR) !== 0) return noReply('a DNS response, not a query');
  if (dns.readUInt16BE(4) === 0) return noReply('a DNS query without a question');
  if (dns.readUInt16BE(10) !== 0) return noReply('a DNS query with additional records (unsupported, as in OVN)');

  // The first question's name: labels up to a zero length byte.
  const labels: Buffer[] = [];
  let at = DNS_HEADER_BYTES;
  while (at < dns.length && dns[at] !== 0) {
    const len = dns[at] as number;
    at++;
    if (at + len > dns.length) return noReply('a query name label runs past the packet');
    labels.push(dns.subarray(at, at + len));
    at += len;
  }
  at++;
  if (at + 4 > dns.length) return noReply('the question has no type and class');
  const qname = Buffer.from(dns.subarray(DNS_HEADER_BYTES, at));
  const qtype = dns.readUInt16BE(at);
  if (qtype !== DNS_TYPE.A && qtype !== DNS_TYPE.AAAA && qtype !== DNS_TYPE.ANY && qtype !== DNS_TYPE.PTR) {
    return noReply(`query type ${qtype} is not answered`);
  }
  // Record keys are text: a name that is not UTF-8 cannot be one of them.
  const nameBytes = Buffer.concat(labels.flatMap((l, i) => (i === 0 ? [l] : [Buffer.from('.'), l])));
  const name = nameBytes.toString('utf8');
  if (!Buffer.from(name, 'utf8').equals(nameBytes)) return noReply('the query name is not UTF-8');
  const key = asciiLower(name);
  let value: string | undefined;
  for (const records of recordSets) {
    value = records.get(key);
    if (value !== undefined) break;
  }
  if (value === undefined) return noReply(`no DNS record for ${JSON.stringify(key)}`);
  const answers = answersFor(qtype, qname, value);
  if (answers.length === 0) return noReply(`the record of ${JSON.stringify(key)} has no answer of type ${qtype}`);

  const l4Offset = f.l4Offset;
  const l3Offset = f.eth.l3Offset;
  const body = Buffer.concat(answers);
  const udpBytes = dgram.length + body.length;
  const ipHeaderBytes = l4Offset - l3Offset;
  if (udpBytes + ipHeaderBytes > 0xffff) return noReply('the response would not fit in an IP packet');
  const src = Buffer.from(raw.buffer, raw.byteOffset, raw.length);
  const out = Buffer.concat([src.subarray(0, l4Offset), dgram, body]);
  const udp = out.subarray(l4Offset);
  const dnsOut = udp.subarray(UDP_HEADER_BYTES);
  dnsOut[2] = (dnsOut[2] as number) | DNS_FLAG_QR;
  dnsOut.writeUInt16BE(answers.length, 6);
  dnsOut.writeUInt16BE(0, 10);
  udp.writeUInt16BE(udpBytes, 4);
  udp.writeUInt16BE(0, 6);
  if (f.ipv4 !== undefined) {
    out.writeUInt16BE(ipHeaderBytes + udpBytes, l3Offset + 2);
    refreshIpv4Checksum(out.subarray(l3Offset, l4Offset));
  } else if (f.ipv6 !== undefined) {
    out.writeUInt16BE(udpBytes, l3Offset + 4);
    fillUdp6Checksum(udp, f.ipv6.src, f.ipv6.dst);
  }
  return { kind: 'reply', packet: out, answers: answers.length };
}
