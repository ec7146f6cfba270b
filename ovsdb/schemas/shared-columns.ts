// Column sets that OVN_Northbound and OVN_Southbound define identically (the SSL settings of
// ovsdb-server, and port mirroring sessions, which northd copies from NB to SB), declared once.
import { bool, int, smap, str } from './dsl.js';

export const DIRECTION = str({ enum: ['from-lport', 'to-lport'] });

export const SSL_COLUMNS = {
  private_key: str(),
  certificate: str(),
  ca_cert: str(),
  bootstrap_ca_cert: bool(),
  ssl_protocols: str(),
  ssl_ciphers: str(),
  external_ids: smap(),
};

export const MIRROR_COLUMNS = {
  name: str(),
  filter: DIRECTION,
  sink: str(),
  type: str({ enum: ['gre', 'erspan'] }),
  index: int(),
  external_ids: smap(),
};
